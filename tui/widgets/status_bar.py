"""The status bar: engine state, replay speed, the config segment, a running compile's clock,
and every optimization's state (what the UI asked for; `*` marks what the engine does not
serve yet)."""

from __future__ import annotations

import time
from typing import Callable

from rich.text import Text
from textual.reactive import reactive
from textual.widgets import Static

from probe.live import LiveSnapshot
from probe.options import OptConfig
from tui import derive
from tui.format import fmt_speed
from tui.widgets.throughput import OVERLOADED

# option → how the status bar names it (short: the line must fit 120 columns)
SHORT_NAMES: dict[str, str] = {
    "compile": "compile", "decode": "decode", "dynamic": "dynamic", "bucketing": "bucket",
    "kv_cache": "kv", "precision": "prec", "quant": "quant", "prewarm": "prewarm",
    "batching": "batch"}


def options_line(requested: OptConfig, served: OptConfig | None) -> Text:
    default = OptConfig()
    text = Text()
    for name, short in SHORT_NAMES.items():
        value = getattr(requested, name)
        text.append(f"{short}=", style="dim")
        text.append(value, style="bold cyan" if value != getattr(default, name) else "")
        if served is not None and getattr(served, name) != value:
            text.append("*", style="bold yellow")
        text.append(" ")
    text.rstrip()
    return text


def state_text(state: str, note: str, paused: bool) -> Text:
    if state == "live":
        return Text("⏸ paused" if paused else "▶ running",
                    style="bold yellow" if paused else "bold green")
    if state == "failed":
        return Text(f"✖ engine stopped: {note} — R restarts it; data kept", style="bold red")
    if state == "loading":
        return Text(f"◌ {note}", style="yellow")
    if state == "finished":
        return Text("■ replay finished", style="bold")
    if state == "read-only":
        return Text(f"◼ read-only {note}".rstrip(), style="bold magenta")
    return Text("◌ starting the engine…", style="yellow")


class StatusBar(Static):
    snapshot: reactive[LiveSnapshot | None] = reactive(None)
    requested: reactive[OptConfig] = reactive(OptConfig)
    speed: reactive[float] = reactive(1.0)
    paused: reactive[bool] = reactive(False)
    engine_state: reactive[str] = reactive("starting")
    engine_note: reactive[str] = reactive("")

    def __init__(self, *, clock: Callable[[], float] = time.monotonic,
                 id: str | None = None) -> None:
        super().__init__(id=id, markup=False)
        self._clock = clock
        self._received_at = clock()

    def on_mount(self) -> None:
        self.set_interval(1.0, self._tick)

    def watch_snapshot(self) -> None:
        self._received_at = self._clock()

    def _tick(self) -> None:
        if self.snapshot is not None and self.snapshot.compiling_since_s is not None:
            self.refresh()

    def compiling_s(self) -> float | None:
        """Seconds the running compile has taken; the local clock stops with a dead engine."""
        snapshot = self.snapshot
        if snapshot is None or self.engine_state in ("failed", "read-only"):
            local = 0.0
        else:
            local = self._clock() - self._received_at
        return None if snapshot is None else derive.compiling_elapsed_s(snapshot, local)

    def render(self) -> Text:
        snapshot = self.snapshot
        line = state_text(self.engine_state, self.engine_note, self.paused)
        line.append(f"  {fmt_speed(self.speed)}", style="bold")
        if snapshot is not None:
            line.append("  │  ")
            line.append(f"{snapshot.config_id} ", style="bold")
            line.append(derive.config_label(snapshot, snapshot.config_id))
            elapsed = self.compiling_s()
            if elapsed is not None:
                line.append("  │  ")
                line.append(f"compiling… {elapsed:.0f} s", style="bold reverse red")
                if snapshot.compiling_request:
                    line.append(f" ({snapshot.compiling_request} waits)", style="red")
            if snapshot.replay.overloaded:
                line.append("  │  ")
                line.append(f"{OVERLOADED} ({snapshot.replay.queue_depth})", style="bold red")
            where = f"  │  {snapshot.model} · {snapshot.device} · {snapshot.replay.trace}"
            if line.cell_len + len(where) <= self.content_size.width:
                line.append(where, style="dim")
        line.append("\n")
        line.append_text(options_line(self.requested,
                                      snapshot.options if snapshot is not None else None))
        return line
