"""Throughput and queue: served, offered and capacity rates, tokens/s, queue depth, done and
failed."""

from __future__ import annotations

from rich.text import Text

from probe.analysis.load_check import NEAR_CAPACITY
from probe.analysis.load_figures import live_load
from probe.common.units import NO_DATA, fmt_count, fmt_fraction, fmt_rate
from probe.contract.live import LiveView
from tui.format import fitting
from tui.pending_wait import fmt_wait
from tui.steady_text import backlog_line
from tui.widgets.panel import Panel, Parts

OVERLOADED = "offered load exceeds capacity — queue growing"
OVERLOADED_SHORT = "offered load exceeds capacity"


def throughput_headline(view: LiveView) -> Text:
    replay = view.replay
    text = Text(f"{fmt_rate(view.window.throughput_rps, 'req/s')} served · ",
                no_wrap=True, overflow="ellipsis")
    text.append(f"queue {replay.queue_depth}", style="bold red" if replay.overloaded else "")
    if view.backlog is not None:
        text.append(f" ({view.backlog.source_config}'s compiles)", style="yellow")
    idle = idle_text(view)
    if idle is not None:
        text.append(f" · {idle}", style="bold yellow")
    return text


def idle_text(view: LiveView) -> str | None:
    """ "nothing served for 2 min (compiling)" while the window's rates decay."""
    idle = view.window.idle_s
    if idle is None:
        return None
    why = " (compiling)" if view.compiling is not None else ""
    return f"nothing served for {fmt_wait(idle)}{why}"


def throughput_detail(view: LiveView, width: int = 80) -> Text:
    replay, window = view.replay, view.window
    text = Text(no_wrap=True, overflow="ellipsis")
    # the one sentence the doctor and the checklist print too (load_figures.Load.text);
    # re-read at every view: the calibration's 50% is measured once
    load = live_load(replay.offered_rps, replay.capacity_rps)
    share = load.share
    text.append(load.rates_text() + "\n")
    text.append(load.share_text() + "\n",
                style="bold yellow" if share is not None and share > NEAR_CAPACITY else "dim")
    text.append(f"tokens  {fmt_rate(window.tokens_per_s, 'tok/s')}\n")
    if view.slo is not None:
        text.append(goodput_line(view) + "\n")
    total = "" if replay.total is None else f" of {fmt_count(replay.total)}"
    text.append(f"done {fmt_count(replay.completed)}{total} · ")
    text.append(f"failed {fmt_count(replay.failed)}", style="bold red" if replay.failed else "")
    left = backlog_line(view, width)
    if left is not None:
        text.append(f"\n{left}", style="yellow")
    if replay.overloaded:
        text.append(f"\n{fitting(width, OVERLOADED, OVERLOADED_SHORT)}", style="bold red")
    batch = view.batch
    if batch.mode != "off":
        text.append(f"\nbatch {batch.mode}: {fmt_occupancy(batch.occupancy_mean)}/"
                    f"{batch.max_batch} · pad {fmt_fraction(batch.padding_waste)}\n")
        if batch.steps is not None:     # slots in use, captured sizes, host against GPU
            text.append(fitting(width, batch.steps.text(), batch.steps.short_text()) + "\n",
                        style="bold yellow" if batch.steps.bound == "host" else "")
        text.append(sparkline(batch.occupancy_recent, batch.max_batch), style="cyan")
    return text


def goodput_line(view: LiveView) -> str:
    """Beside throughput, when an SLO is set: what of it met the SLO (the window's)."""
    good = view.window.goodput
    return (f"goodput {fmt_rate(good.goodput_rps, 'req/s')} · "
            f"{fmt_rate(good.goodput_tokens_per_s, 'tok/s')} · "
            f"SLO met {fmt_fraction(good.slo_attainment)}"
            + (f" ({view.slo.text()})" if view.slo is not None else ""))


SPARKS = " ▁▂▃▄▅▆▇█"


def fmt_occupancy(value: float | None) -> str:
    return NO_DATA if value is None else f"{value:.1f}"


def sparkline(values: tuple[float, ...], top: int) -> str:
    """Batch occupancy per request, oldest first, scaled to the batch limit."""
    steps = len(SPARKS) - 1
    return "".join(SPARKS[min(steps, round(v / max(top, 1) * steps))] for v in values)


class ThroughputPanel(Panel):
    TITLE = "Throughput & queue"

    def render_key(self, view: LiveView) -> object:
        return (view.replay, view.window.tokens_per_s, view.window.throughput_rps,
                view.batch, view.backlog, view.window.goodput, view.slo)

    def render_parts(self, view: LiveView, width: int) -> Parts:
        return Parts(throughput_headline(view), throughput_detail(view, width))
