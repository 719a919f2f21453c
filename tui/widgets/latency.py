"""Latency: p50/p95/p99 of latency, TTFT and TPOT over the window and the current segment;
the current config's TPOT against this machine's memory roofline and whether its compile is
repaid yet; per-request latency over time with markers at config changes and compiles.

The compact layout has no room for the two cost lines: a short form of them takes the
border's subtitle there."""

from __future__ import annotations

import math
import time

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.widgets import Static
from textual_plotext import PlotextPlot

from probe.analysis.stats import MIN_BREAK_EVEN_REQUESTS
from probe.common.units import fmt_age, fmt_count, fmt_ms, fmt_ratio
from probe.contract.figures import BATCHED, Summary
from probe.contract.live import LiveView
from probe.contract.options import OPTION_BY_KEY, OptConfig
from tui import derive
from tui.format import fitting
from tui.steady_text import BACKLOG_MARK, backlog_caption
from tui.widgets.panel import WAITING, Panel

# plotext's names for the markers, and Rich's for the legend
COMPILE_COLOR, COMPILE_RICH = "red", "red"
CONFIG_COLOR, CONFIG_RICH = "orange", "dark_orange"


WARM_COLUMNS_WIDE = 60          # below this many cells: p50 and p95, and warm's p50


def latency_table(view: LiveView, width: int = 66) -> Table:
    """p50/p95/p99 over all requests, and beside them over the warm ones (those that waited
    on no compile, probe.analysis.steady_state): window and current config."""
    segment = derive.segment(view, view.config_id)
    window = view.window
    wide = width >= WARM_COLUMNS_WIDE
    table = Table(box=None, padding=(0, 1), show_edge=False, header_style="bold")
    table.add_column("", style="bold", no_wrap=True)
    table.add_column("over", style="dim", no_wrap=True)
    for name in ("p50", "p95", "p99") if wide else ("p50", "p95"):
        table.add_column(name, justify="right", min_width=6, no_wrap=True)
    for name in ("warm", "p95", "p99") if wide else ("warm",):    # warm's p50, p95, p99
        table.add_column(name, justify="right", min_width=6, no_wrap=True, style="green")
    warm_window, warm_segment = window.warm, segment.warm if segment else None
    rows = (("latency", window.latency_ms, segment.latency_ms if segment else Summary(),
             lambda w: w.latency_ms),
            ("TTFT", window.ttft_ms, segment.ttft_ms if segment else Summary(),
             lambda w: w.ttft_ms),
            ("TPOT", window.tpot_ms, segment.tpot_ms if segment else Summary(),
             lambda w: w.tpot_ms))
    marked = window.backlog_dominated
    label = Text(f"window{BACKLOG_MARK}" if marked else "window",
                 style="yellow" if marked else "")
    for name, over_window, over_segment, warm_of in rows:
        table.add_row(name, label, *_percentiles(over_window)[:3 if wide else 2],
                      *_warm(warm_of, warm_window, wide))
        table.add_row("", Text(view.config_id), *_percentiles(over_segment)[:3 if wide else 2],
                      *_warm(warm_of, warm_segment, wide))
    return table


def _warm(read, warm, wide: bool) -> tuple[str, ...]:
    summary = read(warm) if warm is not None else Summary()
    return _percentiles(summary) if wide else (fmt_ms(summary.p50),)


def counts_subtitle(view: LiveView) -> str:
    """How many requests the figures are over; when the backlog dominates the window, that."""
    caption = backlog_caption(view)
    if caption is not None:
        return caption
    segment = derive.segment(view, view.config_id)
    return (f"window {fmt_count(view.window.requests)} req · {view.config_id} "
            f"{fmt_count(segment.requests if segment else 0)} req")


def _percentiles(summary: Summary) -> tuple[str, str, str]:
    return fmt_ms(summary.p50), fmt_ms(summary.p95), fmt_ms(summary.p99)


def roofline_line(view: LiveView, width: int, now_unix: float) -> Text:
    """The current config's TPOT p50 over this machine's memory roofline for its precision
    (RooflineStatus.ratio), and when the bandwidth was measured."""
    roofline = view.roofline
    if roofline is None:
        return Text("roofline: this machine's bandwidth is not measured yet", style="dim")
    tpot_ms, ratio = derive.roofline_ratio(view)
    limit_ms, rows = derive.roofline_limit(view)
    batched = rows > BATCHED and limit_ms != roofline.roofline_ms
    which = f"batch-{rows:.1f} roofline" if batched else "roofline"
    scope = (f" ({view.tpot.scope()})" if view.tpot is not None and view.tpot.tpot_ms == tpot_ms
             else "")
    tpot = f"{view.config_id} TPOT {fmt_ms(tpot_ms)}{scope}"
    limit = (f"{fmt_ratio(ratio)} {which}" if ratio is not None
             else f"{which} {fmt_ms(limit_ms)}")
    age = fmt_age(now_unix - roofline.measured_unix)
    measured = f"another run's, {age}" if roofline.from_earlier_run else f"measured {age}"
    where = f"{roofline.precision} · {roofline.bandwidth_gb_s:.1f} GB/s"
    note = roofline.lever_note
    earlier = " (another run's GB/s)" if roofline.from_earlier_run else ""
    bare = f"{view.config_id} TPOT {fmt_ms(tpot_ms)} · {limit}"
    choices = [f"{tpot} · {limit} ({where}, {measured})",
               f"{tpot} · {limit} ({where}, {'another run' if roofline.from_earlier_run else age})",
               f"{tpot} · {limit} ({roofline.precision}){earlier}", f"{tpot} · {limit}", bare]
    if note:       # why the precision is slow here comes before where the bandwidth came from
        choices = [f"{choices[0]} · {note}", f"{tpot} · {limit} · {note}{earlier}",
                   f"{tpot} · {limit} · {note}", f"{bare} · {note}", *choices[2:]]
    return Text(fitting(width, *choices))


def twin_keys(served: OptConfig, twin: OptConfig) -> str:
    """The keys that turn the served options into their eager twin: "c→compile=off"."""
    return " ".join(f"{OPTION_BY_KEY[key].hotkey}→{key}={value}"
                    for key, value in twin.as_dict().items() if getattr(served, key) != value)


def break_even_line(view: LiveView, width: int) -> Text:
    """Requests of this traffic that repay the served config's compile (probe.analysis.stats.break_even),
    or why there is no such figure yet."""
    cost = derive.compile_cost(view)
    pair = f"({cost.compiled_config} vs {cost.eager_config})"
    if cost.status == "repaid":
        return Text(f"compile repaid after ≈{fmt_count(cost.requests)} requests {pair}")
    if cost.status == "never":
        return Text(f"compile never repaid: compiled is not faster {pair}", style="yellow")
    if cost.status == "measuring":
        return Text(fitting(width, f"compile break-even: measuring (≥{MIN_BREAK_EVEN_REQUESTS} "
                                   f"requests each side) {pair}",
                            f"break-even: measuring (≥{MIN_BREAK_EVEN_REQUESTS} requests "
                            "each side)"), style="dim")
    if cost.status == "no twin" and cost.twin is not None:
        twin, keys = cost.twin.label(), twin_keys(view.options, cost.twin)
        return Text(fitting(width, f"break-even: serve {twin} eager too ({keys}), "
                                   f"≥{MIN_BREAK_EVEN_REQUESTS} requests",
                            f"break-even: serve {twin} eager too ({keys})",
                            f"break-even: no eager twin served ({keys})"), style="dim")
    return Text(f"no compile to repay: {view.config_id} runs eager", style="dim")


def cost_summary(view: LiveView) -> str | None:
    """The two cost lines in a few words, for the compact layout (None: nothing to say)."""
    _, ratio = derive.roofline_ratio(view)
    parts = [] if ratio is None else [f"{fmt_ratio(ratio)} roofline"]
    cost = derive.compile_cost(view)
    parts.append({"repaid": f"repaid ≈{fmt_count(cost.requests)} req",
                  "never": "compile never repaid", "measuring": "break-even: measuring",
                  "no twin": "break-even: no eager twin", "eager": ""}[cost.status])
    return " · ".join(p for p in parts if p) or None


def log_ticks(low_ms: float, high_ms: float) -> tuple[list[float], list[str]]:
    """Powers of ten spanning the data (at least two), labelled as durations: 100 ms, 1 s…"""
    first = math.floor(math.log10(max(low_ms, 0.1)))
    last = max(math.ceil(math.log10(max(high_ms, 0.1))), first + 1)
    ticks = [10.0 ** e for e in range(first, last + 1)]
    return ticks, [fmt_ms(t).replace(".0 ", " ") for t in ticks]


class LatencyPlot(PlotextPlot):
    """Per-request latency at the time the engine started it, on a log axis so a 60 s compile
    stall and an 800 ms request both read. Orange lines: config changes; red: compiles.

    The log is taken here and plotted on a linear axis whose limits are the outer ticks:
    plotext's own log scale sets the axis from the data, so a tick below the lowest point
    fell outside the canvas and its label was drawn over the x axis' rows (and plotext
    log-scales the data and ticks but not a ylim, which is why a ylim in ms emptied it)."""

    def show(self, view: LiveView) -> None:
        plt = self.plt
        plt.clear_figure()
        plt.xlabel("session time (s)")
        recent = view.recent
        if recent:
            values = [max(r.latency_ms, 0.1) for r in recent]
            ticks, labels = log_ticks(min(values), max(values))
            plt.ylim(math.log10(ticks[0]), math.log10(ticks[-1]))
            plt.yticks([math.log10(t) for t in ticks], labels)
            ok = [r for r in recent if r.ok]
            failed = [r for r in recent if not r.ok]
            if ok:
                plt.scatter([r.start_s for r in ok], [_log(r.latency_ms) for r in ok],
                            marker="braille", color="cyan")
            if failed:
                plt.scatter([r.start_s for r in failed], [_log(r.latency_ms) for r in failed],
                            marker="x", color="red")
            start, top = min(r.start_s for r in recent), _log(max(values))
            for event in view.compile_events:
                if event.start_s >= start:
                    plt.vertical_line(event.start_s, color=COMPILE_COLOR)
            for change in derive.config_changes(recent):
                plt.vertical_line(change.t_s, color=CONFIG_COLOR)
                plt.text(change.config_id, change.t_s, top, color=CONFIG_COLOR)
        self.refresh()


def _log(latency_ms: float) -> float:
    return math.log10(max(latency_ms, 0.1))


def plot_key(view: LiveView) -> object:
    recent, events = view.recent, view.compile_events
    ends = (recent[0].seq, recent[-1].seq) if recent else None
    return ends, len(recent), len(events), events[-1:]


class LatencyPanel(Panel):
    TITLE = "Latency"

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._numbers_key: object = None
        self._cost_key: object = None
        self._plot_key: object = None

    def compose(self) -> ComposeResult:
        yield Static(WAITING, id="latency-numbers", classes="headline")
        yield Static("", id="latency-cost", classes="detail", markup=False)
        yield Static(Text.from_markup(
            f"[{CONFIG_RICH}]│[/] config change  [{COMPILE_RICH}]│[/] compile started  "
            "[cyan]⠂[/] request (start, latency)"),
            id="latency-legend", classes="detail")
        yield LatencyPlot(id="latency-plot", classes="detail")

    def watch_view(self, view: LiveView | None) -> None:
        if view is None:
            return
        numbers_key = (view.window, view.config_id, self.content_size,
                       derive.segment(view, view.config_id))
        if numbers_key != self._numbers_key:
            self._numbers_key = numbers_key
            numbers = self.query_one("#latency-numbers", Static)
            width = self.content_size.width or numbers.content_size.width or 66
            numbers.update(latency_table(view, width), layout=False)
        self.show_cost(view)
        if plot_key(view) != self._plot_key:
            self._plot_key = plot_key(view)
            # Data only; plotext draws in render(), which a hidden (compact) plot skips.
            self.query_one(LatencyPlot).show(view)

    def show_cost(self, view: LiveView) -> None:
        """The roofline and break-even lines; folded into the subtitle when they are hidden."""
        cost = self.query_one("#latency-cost", Static)
        width = cost.content_size.width or self.content_size.width or 66
        lines = Text("\n").join([roofline_line(view, width, time.time()),
                                 break_even_line(view, width)])
        short = None if cost.display else cost_summary(view)
        # ids are data, not markup
        subtitle = Text(short if short is not None else counts_subtitle(view))
        key = (lines.plain, subtitle.plain)
        if key != self._cost_key:
            self._cost_key = key
            self.border_subtitle = subtitle
            cost.update(lines, layout=False)
