"""Throughput and queue: served, offered and capacity rates, tokens/s, queue depth, done and
failed."""

from __future__ import annotations

from rich.text import Text

from probe.live import LiveSnapshot
from tui.format import NO_DATA, fitting, fmt_count, fmt_fraction, fmt_rate
from tui.widgets.panel import Panel, Parts

OVERLOADED = "offered load exceeds capacity — queue growing"
OVERLOADED_SHORT = "offered load exceeds capacity"


def throughput_headline(snapshot: LiveSnapshot) -> Text:
    replay = snapshot.replay
    text = Text(f"{fmt_rate(snapshot.window.throughput_rps, 'req/s')} served · ",
                no_wrap=True, overflow="ellipsis")
    text.append(f"queue {replay.queue_depth}", style="bold red" if replay.overloaded else "")
    return text


def throughput_detail(snapshot: LiveSnapshot, width: int = 80) -> Text:
    replay, window = snapshot.replay, snapshot.window
    text = Text(no_wrap=True, overflow="ellipsis")
    text.append(f"offered {fmt_rate(replay.offered_rps, 'req/s')} · "
                f"capacity {fmt_rate(replay.capacity_rps, 'req/s')}\n")
    text.append(f"tokens  {fmt_rate(window.tokens_per_s, 'tok/s')}\n")
    total = "" if replay.total is None else f" of {fmt_count(replay.total)}"
    text.append(f"done {fmt_count(replay.completed)}{total} · ")
    text.append(f"failed {fmt_count(replay.failed)}", style="bold red" if replay.failed else "")
    if replay.overloaded:
        text.append(f"\n{fitting(width, OVERLOADED, OVERLOADED_SHORT)}", style="bold red")
    batch = snapshot.batch
    if batch.mode != "off":
        text.append(f"\nbatch {batch.mode}: {fmt_occupancy(batch.occupancy_mean)}/"
                    f"{batch.max_batch} · pad {fmt_fraction(batch.padding_waste)}\n")
        text.append(sparkline(batch.occupancy_recent, batch.max_batch), style="cyan")
    return text


SPARKS = " ▁▂▃▄▅▆▇█"


def fmt_occupancy(value: float | None) -> str:
    return NO_DATA if value is None else f"{value:.1f}"


def sparkline(values: tuple[float, ...], top: int) -> str:
    """Batch occupancy per request, oldest first, scaled to the batch limit."""
    steps = len(SPARKS) - 1
    return "".join(SPARKS[min(steps, round(v / max(top, 1) * steps))] for v in values)


class ThroughputPanel(Panel):
    TITLE = "Throughput & queue"

    def render_key(self, snapshot: LiveSnapshot) -> object:
        return (snapshot.replay, snapshot.window.tokens_per_s, snapshot.window.throughput_rps,
                snapshot.batch)

    def render_parts(self, snapshot: LiveSnapshot, width: int) -> Parts:
        return Parts(throughput_headline(snapshot), throughput_detail(snapshot, width))
