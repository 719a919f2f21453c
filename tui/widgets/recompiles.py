"""Recompilations: running counts and a feed of compile events, newest first; a compile still
running is the feed's first row, its seconds ticking on the CompileClock."""

from __future__ import annotations

import re
import time
from collections import Counter
from dataclasses import dataclass
from typing import Callable, ClassVar

from rich.console import RenderableType
from rich.table import Table
from rich.text import Text
from textual.reactive import reactive

from probe.analysis.stats import added_phases, phases_within
from probe.common.units import fmt_clock_column, fmt_s, fmt_us, plural
from probe.contract.live import LiveView
from probe.contract.records import CompileEvent, CompileInProgress
from tui import derive
from tui.format import fitting
from tui.widgets.compile_clock import TICK_S, CompileClock, whole_seconds
from tui.widgets.panel import Panel, Parts

KIND_STYLES = {"compile": "yellow", "recompile": "bold red", "fallback": "magenta",
               "limit": "bold magenta", "cudagraph": "cyan", "autotune": "cyan",
               "degraded": "bold magenta", "abandoned": "dim yellow",
               "compiling": "bold reverse yellow"}
FEED_ROWS = 30
COMPILING_NOW = " · compiling now"


@dataclass(frozen=True)
class Running:
    """The compile in progress, read on the CompileClock."""
    progress: CompileInProgress
    elapsed_s: float        # this compile so far
    stall_s: float          # the waiting request's stall so far, earlier compiles included


def compile_counts(view: LiveView, width: int = 80) -> Text:
    """Counts by kind and compile time; "compiling now" while one runs, when it fits."""
    kinds = Counter(e.kind for e in view.compile_events)
    text = Text()
    text.append(plural(view.compiles, "compile"), style="yellow")
    text.append(" · ")
    text.append(plural(view.recompiles, "recompile"),
                style="bold red" if view.recompiles else "")
    for kind in ("fallback", "limit", "degraded", "abandoned", "cudagraph"):
        if kinds[kind]:
            text.append(f" · {kinds[kind]} {kind}", style=KIND_STYLES[kind])
    total_s = sum(s.compile_s for s in view.segments)
    if total_s:
        room = width - text.cell_len - (len(COMPILING_NOW) if view.compiling else 0)
        text.append(fitting(room, *compile_time_texts(total_s, view)), style="dim")
    if view.compiling is not None and text.cell_len + len(COMPILING_NOW) <= width:
        text.append(COMPILING_NOW, style="bold yellow")
    elif view.ledger and text.cell_len + len(view.ledger) + 3 <= width:
        text.append(f" · {view.ledger}", style="dim")     # the compile time comes first
    return text


def compile_time_texts(total_s: float, view: LiveView) -> tuple[str, ...]:
    """The compile seconds, richest first: with dynamo's split into tracing, AOTAutograd,
    inductor and loading from inductor's caches (tracing is Python work that graph breaks and
    recompiles repeat; inductor is code generation), the parts that took time; then with the
    largest part's share; then alone."""
    phases = phases_within(added_phases(s.compile_phases for s in view.segments), total_s)
    plain = f" ({fmt_s(total_s)})"
    if phases is None or not phases.total_s:
        return (plain,)
    return (f" ({fmt_s(total_s)}: {phases.split_text(total_s)})",
            f" ({fmt_s(total_s)}, {phases.largest_share(total_s)})", plain)


def running_function(running: Running) -> str:
    return derive.compile_function(running.progress.compile_id, running.progress.function)


def running_event(running: Running) -> Text:
    """The compile in progress on one line: what the compact layout shows while it runs."""
    progress = running.progress
    text = Text("now ", no_wrap=True, overflow="ellipsis")
    text.append("compiling", style=KIND_STYLES["compiling"])
    text.append(f" {progress.compile_id} {running_function(running)} · "
                f"{whole_seconds(running.elapsed_s)}")
    if progress.stage:
        text.append(f" · {progress.stage}", style="bold yellow")
    if progress.request_id:
        text.append(f" ({progress.request_id} waits)", style="red")
    return text


def latest_event(events: tuple[CompileEvent, ...], running: Running | None = None) -> Text:
    """The newest event on one line (the running compile, when there is one): what the compact
    layout shows instead of the feed."""
    if running is not None:
        return running_event(running)
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


def compile_feed(events: tuple[CompileEvent, ...], rows: int = FEED_ROWS,
                 running: Running | None = None) -> RenderableType:
    if not events and running is None:
        return Text("no compiles yet", style="dim")
    table = Table(box=None, padding=(0, 1), collapse_padding=True, pad_edge=False,
                  show_edge=False, header_style="bold dim", expand=True)
    table.add_column("at", justify="right", no_wrap=True)
    table.add_column("kind", no_wrap=True)
    table.add_column("id", no_wrap=True)
    table.add_column("took", justify="right", no_wrap=True)
    # Only a live engine measures it (dynamo's figure); sessions saved before it had none.
    guards = any(event.guard_us is not None for event in events)
    if guards:
        table.add_column("guards", justify="right", no_wrap=True)
    table.add_column("request", no_wrap=True)
    table.add_column("function", no_wrap=True, max_width=16, overflow="ellipsis")
    table.add_column("guard failure / reason", no_wrap=True, overflow="ellipsis", ratio=1)
    if running is not None:
        table.add_row(*_with_guards(running_row(running), "", guards))
        rows -= 1
    for event in reversed(events[-rows:] if rows > 0 else ()):
        # Text, not str: a guard failure or a function name is data, never markup
        row = (fmt_clock_column(event.start_s),
               Text(event.kind, style=KIND_STYLES.get(event.kind, "")),
               Text(event.compile_id),
               fmt_s(event.duration_s, missing="running").replace(" s", "s"),
               Text(event.request_id or "prewarm"),
               Text(event.function), Text(short_reason(event.reason)))
        table.add_row(*_with_guards(row, fmt_us(event.guard_us, missing="").replace(" ", ""),
                                    guards))
    return table


def _with_guards(row: tuple[RenderableType, ...], guards_cell: str,
                 shown: bool) -> tuple[RenderableType, ...]:
    """The guards cell goes after "took" (the fourth column) when the feed shows it."""
    return (*row[:4], guards_cell, *row[4:]) if shown else row


def running_row(running: Running) -> tuple[RenderableType, ...]:
    """The compile in progress as a feed row: its seconds tick, "…" says it is not over."""
    progress = running.progress
    state = Text("in progress", style="yellow")
    if progress.stage:
        state.append(f" · {progress.stage}", style="bold yellow")
    if progress.waited_before_s > 0:
        state.append(f" · {progress.request_id or 'prewarm'} stalled "
                     f"{whole_seconds(running.stall_s)} in all", style="red")
    return (fmt_clock_column(progress.since_s),
            Text("compiling", style=KIND_STYLES["compiling"]), Text(progress.compile_id),
            whole_seconds(running.elapsed_s).replace(" s", "s…"),
            Text(progress.request_id or "prewarm"), Text(running_function(running)), state)


class RecompilePanel(Panel):
    TITLE = "Recompilations"
    # The local clock a running compile ticks on, when the app passes none (tests fix it).
    default_clock: ClassVar[Callable[[], float]] = staticmethod(time.monotonic)
    engine_state: reactive[str] = reactive("live")

    def __init__(self, *, clock: Callable[[], float] | None = None,
                 id: str | None = None) -> None:
        super().__init__(id=id)
        self._compile_clock = CompileClock(clock or type(self).default_clock)
        self.border_subtitle = "e: reasons in full"

    def on_mount(self) -> None:
        self.set_interval(TICK_S, self._tick)

    def watch_view(self, view: LiveView | None) -> None:
        self._compile_clock.arrived(view)
        super().watch_view(view)

    def watch_engine_state(self) -> None:
        self.watch_view(self.view)

    def _tick(self) -> None:
        if self.view is not None and self.view.compiling is not None:
            self.watch_view(self.view)

    def running(self, view: LiveView) -> Running | None:
        clock, state = self._compile_clock, self.engine_state
        elapsed, stall = clock.elapsed_s(view, state), clock.stall_s(view, state)
        if view.compiling is None or elapsed is None or stall is None:
            return None
        return Running(view.compiling, elapsed, stall)

    def render_key(self, view: LiveView) -> object:
        running = self.running(view)
        ticking = (int(running.elapsed_s), int(running.stall_s)) if running else None
        return (view.compile_events, tuple(s.compile_s for s in view.segments),
                view.compiling, ticking, view.ledger)

    def render_parts(self, view: LiveView, width: int) -> Parts:
        events, running = view.compile_events, self.running(view)
        rows = max(self.content_size.height - 2, 1) if self.content_size.height else FEED_ROWS
        return Parts(compile_counts(view, width), compile_feed(events, rows, running),
                     latest_event(events, running))
