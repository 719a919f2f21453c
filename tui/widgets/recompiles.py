"""Recompilations: running counts and a feed of compile events, newest first."""

from __future__ import annotations

import re
from collections import Counter

from rich.console import RenderableType
from rich.table import Table
from rich.text import Text

from probe.live import LiveSnapshot
from probe.records import CompileEvent
from tui.format import fmt_clock, fmt_s, plural
from tui.widgets.panel import Panel, Parts

KIND_STYLES = {"compile": "yellow", "recompile": "bold red", "fallback": "magenta",
               "limit": "bold magenta", "cudagraph": "cyan", "autotune": "cyan"}
FEED_ROWS = 30


def compile_counts(snapshot: LiveSnapshot) -> Text:
    kinds = Counter(e.kind for e in snapshot.compile_events)
    text = Text()
    text.append(plural(snapshot.compiles, "compile"), style="yellow")
    text.append(" · ")
    text.append(plural(snapshot.recompiles, "recompile"),
                style="bold red" if snapshot.recompiles else "")
    for kind in ("fallback", "limit", "cudagraph"):
        if kinds[kind]:
            text.append(f" · {kinds[kind]} {kind}", style=KIND_STYLES[kind])
    total_s = sum(s.compile_s for s in snapshot.segments)
    if total_s:
        text.append(f" ({fmt_s(total_s)})", style="dim")
    return text


def latest_event(events: tuple[CompileEvent, ...]) -> Text:
    """The newest event on one line: what the compact layout shows instead of the feed."""
    if not events:
        return Text("no compiles yet", style="dim")
    event = events[-1]
    text = Text(f"last {event.compile_id} ")
    text.append(event.kind, style=KIND_STYLES.get(event.kind, ""))
    text.append(f" {fmt_s(event.duration_s, missing='running')} {short_reason(event.reason)}")
    text.no_wrap, text.overflow = True, "ellipsis"
    return text


_ENTRY = re.compile(r"(?:^|(?<=; ))\d+/\d+: ")
_SIZE_MISMATCH = re.compile(r"tensor '(?P<name>[^']+)' size mismatch at index (?P<index>\d+)\. "
                            r"expected (?P<expected>\d+), actual (?P<actual>\d+)")


def short_reason(reason: str | None) -> str:
    """Dynamo's size-mismatch guard failures, the usual cause, compacted to fit a feed row:
    "0/0: tensor 'input_ids' size mismatch at index 1. expected 64, actual 37" →
    "input_ids.size(1) 64→37" (the failing cache entry's id is dropped)."""
    if not reason:
        return ""
    return _SIZE_MISMATCH.sub(
        lambda m: f"{m['name']}.size({m['index']}) {m['expected']}→{m['actual']}",
        _ENTRY.sub("", reason))


def compile_feed(events: tuple[CompileEvent, ...], rows: int = FEED_ROWS) -> RenderableType:
    if not events:
        return Text("no compiles yet", style="dim")
    table = Table(box=None, padding=(0, 1), collapse_padding=True, pad_edge=False,
                  show_edge=False, header_style="bold dim", expand=True)
    table.add_column("at", justify="right", no_wrap=True)
    table.add_column("kind", no_wrap=True)
    table.add_column("id", no_wrap=True)
    table.add_column("took", justify="right", no_wrap=True)
    table.add_column("request", no_wrap=True)
    table.add_column("function", no_wrap=True, max_width=16, overflow="ellipsis")
    table.add_column("guard failure / reason", no_wrap=True, overflow="ellipsis", ratio=1)
    for event in reversed(events[-rows:]):
        # Text, not str: a guard failure or a function name is data, never markup
        table.add_row(
            fmt_clock(event.start_s).replace(" s", "s"),
            Text(event.kind, style=KIND_STYLES.get(event.kind, "")),
            Text(event.compile_id),
            fmt_s(event.duration_s, missing="running").replace(" s", "s"),
            Text(event.request_id or "prewarm"),
            Text(event.function), Text(short_reason(event.reason)))
    return table


class RecompilePanel(Panel):
    TITLE = "Recompilations"

    def render_key(self, snapshot: LiveSnapshot) -> object:
        return snapshot.compile_events, tuple(s.compile_s for s in snapshot.segments)

    def render_parts(self, snapshot: LiveSnapshot, width: int) -> Parts:
        events = snapshot.compile_events
        rows = max(self.content_size.height - 2, 1) if self.content_size.height else FEED_ROWS
        return Parts(compile_counts(snapshot), compile_feed(events, rows), latest_event(events))
