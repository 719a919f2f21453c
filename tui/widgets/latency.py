"""Latency: p50/p95/p99 of latency, TTFT and TPOT over the window and the current segment,
and per-request latency over time with markers at config changes and compiles."""

from __future__ import annotations

import math

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.widgets import Static
from textual_plotext import PlotextPlot

from probe.live import LiveSnapshot
from probe.stats import Summary
from tui import derive
from tui.format import fmt_count, fmt_ms
from tui.widgets.panel import WAITING, Panel

# plotext's names for the markers, and Rich's for the legend
COMPILE_COLOR, COMPILE_RICH = "red", "red"
CONFIG_COLOR, CONFIG_RICH = "orange", "dark_orange"


def latency_table(snapshot: LiveSnapshot) -> Table:
    segment = derive.segment(snapshot, snapshot.config_id)
    window = snapshot.window
    table = Table(box=None, padding=(0, 1), show_edge=False, header_style="bold")
    table.add_column("", style="bold", no_wrap=True)
    table.add_column("over", style="dim", no_wrap=True)
    for name in ("p50", "p95", "p99"):
        table.add_column(name, justify="right", min_width=6, no_wrap=True)
    rows = (("latency", window.latency_ms, segment.latency_ms if segment else Summary()),
            ("TTFT", window.ttft_ms, segment.ttft_ms if segment else Summary()),
            ("TPOT", window.tpot_ms, segment.tpot_ms if segment else Summary()))
    for name, over_window, over_segment in rows:
        table.add_row(name, "window", *_percentiles(over_window))
        table.add_row("", Text(snapshot.config_id), *_percentiles(over_segment))
    return table


def counts_subtitle(snapshot: LiveSnapshot) -> str:
    segment = derive.segment(snapshot, snapshot.config_id)
    return (f"window {fmt_count(snapshot.window.requests)} req · {snapshot.config_id} "
            f"{fmt_count(segment.requests if segment else 0)} req")


def _percentiles(summary: Summary) -> tuple[str, str, str]:
    return fmt_ms(summary.p50), fmt_ms(summary.p95), fmt_ms(summary.p99)


def log_ticks(low_ms: float, high_ms: float) -> tuple[list[float], list[str]]:
    """Powers of ten spanning the data, labelled as durations: 100 ms, 1 s, 10 s…"""
    first = math.floor(math.log10(max(low_ms, 0.1)))
    last = math.ceil(math.log10(max(high_ms, 0.1)))
    ticks = [10.0 ** e for e in range(first, last + 1)]
    return ticks, [fmt_ms(t).replace(".0 ", " ") for t in ticks]


class LatencyPlot(PlotextPlot):
    """Per-request latency at the time the engine started it, log scale so a 60 s compile
    stall and an 800 ms request both read. Orange lines: config changes; red: compiles."""

    def show(self, snapshot: LiveSnapshot) -> None:
        plt = self.plt
        plt.clear_figure()
        plt.xlabel("session time (s)")
        recent = snapshot.recent
        if recent:
            values = [max(r.latency_ms, 0.1) for r in recent]
            plt.yscale("log")
            plt.yticks(*log_ticks(min(values), max(values)))
            ok = [r for r in recent if r.ok]
            failed = [r for r in recent if not r.ok]
            if ok:
                plt.scatter([r.start_s for r in ok], [max(r.latency_ms, 0.1) for r in ok],
                            marker="braille", color="cyan")
            if failed:
                plt.scatter([r.start_s for r in failed],
                            [max(r.latency_ms, 0.1) for r in failed], marker="x", color="red")
            start, top = min(r.start_s for r in recent), max(values)
            for event in snapshot.compile_events:
                if event.start_s >= start:
                    plt.vertical_line(event.start_s, color=COMPILE_COLOR)
            for change in derive.config_changes(recent):
                plt.vertical_line(change.t_s, color=CONFIG_COLOR)
                plt.text(change.config_id, change.t_s, top, color=CONFIG_COLOR)
        self.refresh()


def plot_key(snapshot: LiveSnapshot) -> object:
    recent, events = snapshot.recent, snapshot.compile_events
    ends = (recent[0].seq, recent[-1].seq) if recent else None
    return ends, len(recent), len(events), events[-1:]


class LatencyPanel(Panel):
    TITLE = "Latency"

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._numbers_key: object = None
        self._plot_key: object = None

    def compose(self) -> ComposeResult:
        yield Static(WAITING, id="latency-numbers", classes="headline")
        yield Static(Text.from_markup(
            f"[{CONFIG_RICH}]│[/] config change  [{COMPILE_RICH}]│[/] compile started  "
            "[cyan]⠂[/] request (start, latency)"),
            id="latency-legend", classes="detail")
        yield LatencyPlot(id="latency-plot", classes="detail")

    def watch_snapshot(self, snapshot: LiveSnapshot | None) -> None:
        if snapshot is None:
            return
        numbers_key = (snapshot.window, snapshot.config_id,
                       derive.segment(snapshot, snapshot.config_id))
        if numbers_key != self._numbers_key:
            self._numbers_key = numbers_key
            self.border_subtitle = Text(counts_subtitle(snapshot))   # ids are data, not markup
            self.query_one("#latency-numbers", Static).update(latency_table(snapshot),
                                                              layout=False)
        if plot_key(snapshot) != self._plot_key:
            self._plot_key = plot_key(snapshot)
            # Data only; plotext draws in render(), which a hidden (compact) plot skips.
            self.query_one(LatencyPlot).show(snapshot)
