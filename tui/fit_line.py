"""A line of parts fitted to a width by meaning, not cut: each part has a full and a short
form (or none: left out) and a rank; when the line is too long, the parts of lowest rank are
shortened first, one at a time, so what matters most (the served config, an A/B's verdict)
is the last to shorten. Only when every part is short and the line still does not fit is it
cut, with an ellipsis."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from rich.text import Text


@dataclass(frozen=True)
class Part:
    """One item of a line; `short` replaces `full` when the line is too long (None: left out;
    a part that must stay gives its full text again), parts of lower `rank` first."""
    full: Text
    short: Text | None
    rank: int


def part(full: str, short: str | None, rank: int, style: str = "") -> Part:
    return Part(Text(full, style=style), None if short is None else Text(short, style=style),
                rank)


def join_parts(parts: Sequence[Part], shortened: set[int], separator: str) -> Text:
    line = Text(no_wrap=True, overflow="ellipsis")
    for index, one in enumerate(parts):
        shown = one.short if index in shortened else one.full
        if shown is None:
            continue
        if line:
            line.append(separator)
        line.append_text(shown)
    return line


def fit_parts(parts: Sequence[Part], width: int,
              separators: Sequence[str] = ("  │  ", " │ ")) -> Text:
    """The parts joined within `width`: each separator is tried (wider first) before the next
    part is shortened."""
    order = sorted(range(len(parts)), key=lambda i: parts[i].rank)
    shortened: set[int] = set()
    while True:
        for separator in separators:
            line = join_parts(parts, shortened, separator)
            if line.cell_len <= width:
                return line
        if len(shortened) == len(order):
            line.truncate(width, overflow="ellipsis")
            return line
        shortened.add(order[len(shortened)])
