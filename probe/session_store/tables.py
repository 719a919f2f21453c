"""Tables of figures: markdown for reports, aligned plain text for the terminal."""

from __future__ import annotations

from typing import Sequence

from probe.common.terminal_text import terminal_text


def cell(text: object) -> str:
    """A markdown table cell: no pipes, no newlines."""
    return str(text).replace("|", "\\|").replace("\n", " ")


def table(columns: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    lines = ["| " + " | ".join(cell(c) for c in columns) + " |",
             "|" + "|".join("---" for _ in columns) + "|"]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def text_table(columns: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A plain, aligned table for the terminal (every cell through terminal_text)."""
    cells = [[terminal_text(c) for c in columns]] + [[terminal_text(v) for v in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(columns))]
    out = []
    for n, row in enumerate(cells):
        out.append("  ".join(v.ljust(widths[i]) if i == 0 else v.rjust(widths[i])
                             for i, v in enumerate(row)).rstrip())
        if n == 0:
            out.append("  ".join("-" * w for w in widths))
    return "\n".join(out)
