"""The status bar: engine state, replay speed, the config served, a running compile's clock and
overload on the first line; every option as the engine serves it on the second, marking values
asked for that the engine has not received or applied yet (`bucket=off→on`) and values the
engine chose itself once it had them (`decode=fullgraph!`, with its reason on a third line).
Each line fits the width, never wrapped (a wrapped first line would push the options off the
bar): the first line, the waits line and the A/B line are ranked parts that shorten by meaning
(tui/fit_line.py); what still does not fit is cut with an ellipsis."""

from __future__ import annotations

import time
from typing import Callable

from rich.text import Text
from textual.reactive import reactive
from textual.widgets import Static

from probe.common.units import fmt_speed
from probe.contract.live import LiveView
from probe.contract.options import OPTIONS, OptConfig
from tui import derive
from tui.derive import OptionState
from tui.fit_line import Part, fit_parts
from tui.pending_wait import pending_wait_parts
from tui.widgets.compile_clock import TICK_S, CompileClock, whole_seconds
from tui.widgets.throughput import OVERLOADED, OVERLOADED_SHORT
from workloads.thinning import CLOCK_FLOOR, clock_and_keep

# option → how the status bar names it (short: the line should fit 120 columns)
SHORT_NAMES: dict[str, str] = {option.key: option.label for option in OPTIONS}


SHAPE_SEPARATOR = " · trace "     # tui/engine_events.py joins a loading step and the shape so


def state_text(state: str, note: str, paused: bool) -> tuple[Text, Text]:
    """The engine's state, in full and short."""
    if state == "live":
        text = Text("⏸ paused" if paused else "▶ running",
                    style="bold yellow" if paused else "bold green")
        return text, text
    if state == "failed":
        return (Text(f"✖ engine stopped: {note} — R restarts it; data kept", style="bold red"),
                Text("✖ engine stopped — R restarts it", style="bold red"))
    if state == "loading":     # "loading t5-tiny on cpu · trace chat: …": the step first
        step = note.split(SHAPE_SEPARATOR, 1)[0]
        return Text(f"◌ {note}", style="yellow"), Text(f"◌ {step}", style="yellow")
    if state == "finished":
        text = Text("■ replay finished", style="bold")
        return text, text
    if state == "read-only":
        return (Text(f"◼ read-only {note}".rstrip(), style="bold magenta"),
                Text("◼ read-only", style="bold magenta"))
    text = Text("◌ starting the engine…", style="yellow")
    full = text.copy()
    if note:        # the trace's shape, known before the engine is (tui/trace_shape.py)
        full.append(f" {note}", style="dim")
    return full, text


def first_line(view: LiveView | None, state: str, note: str, paused: bool,
               speed: float | None, compiling_s: float | None, width: int) -> Text:
    """`speed`: None while the opening calibrates it (×auto). `compiling_s`: the waiting
    request's compile stall so far (CompileClock.stall_s)."""
    full, short = state_text(state, note, paused)
    parts = [Part(full, short, 5), Part(Text(fmt_speed(speed), style="bold"),
                                        Text(fmt_speed(speed), style="bold"), 9)]
    if speed is not None and speed < CLOCK_FLOOR:   # below the clock's floor: arrivals thinned
        parts.append(Part(Text(f"{clock_and_keep(speed)[1]:.0%} of arrivals kept"), None, 1))
    if view is not None:
        config = Text(f"{view.config_id} ", style="bold")
        config.append(derive.config_label(view, view.config_id))
        parts.append(Part(config, Text(view.config_id, style="bold"), 1))
        if compiling_s is not None and view.compiling is not None:
            clock = Text(f"compiling… {whole_seconds(compiling_s)}", style="bold reverse red")
            waiting = clock.copy()
            if view.compiling.stage:
                waiting.append(f" · {view.compiling.stage}", style="bold reverse red")
            if view.compiling.request_id:
                waiting.append(f" ({view.compiling.request_id} waits)", style="red")
            parts.append(Part(waiting, clock, 2))
        if view.replay.overloaded:
            queue = f" ({view.replay.queue_depth})"
            parts.append(Part(Text(OVERLOADED + queue, style="bold red"),
                              Text(OVERLOADED_SHORT + queue, style="bold red"), 3))
        elif view.read_only:      # a loaded session: its queue when it was saved
            queued = view.replay.queue_depth
            parts.append(Part(Text(f"queue {queued} when saved"), Text(f"queue {queued}"), 3))
        where = f"{view.model} · {view.device} · {view.replay.trace}"
        parts.append(Part(Text(where, style="dim"), None, 0))
    return fit_parts(parts, width)


def option_text(state: OptionState, brief: bool = False) -> Text:
    """`bucket=off→on` pending, `decode=fullgraph!` changed; brief: `bucket→on`."""
    text = Text(SHORT_NAMES.get(state.name, state.name), style="dim")
    if not (brief and state.status == "pending"):
        changed = state.served != getattr(OptConfig(), state.name)
        text.append("=", style="dim")
        text.append(state.served, style="bold cyan" if changed else "")
    if state.status == "pending":
        text.append(f"→{state.asked}", style="bold yellow")
    elif state.status == "changed":
        text.append("!", style="bold magenta")
    return text


def options_line(states: tuple[OptionState, ...], width: int) -> Text:
    """Every option, in order. When they do not fit: first those not at their default or not
    as asked (pending values said briefly if need be), then the rest, dimmed, as far as they
    fit."""
    default = OptConfig()
    line = Text(" ").join(option_text(s) for s in states)
    if line.cell_len > width:
        told = [s for s in states if s.status != "served" or s.served != getattr(default, s.name)]
        for brief in (False, True):
            line = Text(" ").join(option_text(s, brief) for s in told)
            if line.cell_len <= width:
                break
        separator = " · " if told else ""
        for state in (s for s in states if s not in told):
            shown = option_text(state)
            shown.stylize("dim")
            if line.cell_len + len(separator) + shown.cell_len + 2 > width:
                line.append(f"{separator}…", style="dim")
                break
            line.append(separator, style="dim")
            line.append_text(shown)
            separator = " "
    line.no_wrap, line.overflow = True, "ellipsis"
    line.truncate(width, overflow="ellipsis")
    return line


def changes_line(states: tuple[OptionState, ...], width: int) -> Text | None:
    """What the engine serves differently from what was asked, and why."""
    changed = [s for s in states if s.status == "changed"]
    if not changed:
        return None
    line = Text("! ", style="bold magenta", no_wrap=True, overflow="ellipsis")
    for index, state in enumerate(changed):
        if index:
            line.append(" · ")
        line.append(f"{state.name}={state.served} (asked {state.asked})", style="magenta")
        if state.reason:
            line.append(f": {state.reason}")
    line.truncate(width, overflow="ellipsis")
    return line


def switch_line(note: str | tuple[Part, ...], width: int) -> Text:
    """The warm switch's or the A/B's line: parts shortened by rank (the verdict last)."""
    parts = (Part(Text(note), Text(note), 9),) if isinstance(note, str) else note
    line = Text("⇄ ", no_wrap=True, overflow="ellipsis")
    line.append_text(fit_parts(parts, width - 2, separators=(" · ",)))
    line.stylize("cyan")
    line.truncate(width, overflow="ellipsis")
    return line


class StatusBar(Static):
    view: reactive[LiveView | None] = reactive(None)
    requested: reactive[OptConfig] = reactive(OptConfig)
    # Only whether it is None: None means nothing was asked since the engine started (it then
    # serves the options it was started with); what the engine received it says itself.
    options_sent_s: reactive[float | None] = reactive(None)
    speed: reactive[float | None] = reactive(1.0)    # None: ×auto, until calibrated
    paused: reactive[bool] = reactive(False)
    engine_state: reactive[str] = reactive("starting")
    engine_note: reactive[str] = reactive("")
    # the warm switch's line (tui/warm_switch.py), or the A/B's parts (tui/live_ab.py)
    switch_note: reactive[str | tuple[Part, ...]] = reactive("")
    warming_beside: reactive[str] = reactive("")  # the serving config while a side engine warms

    def __init__(self, *, clock: Callable[[], float] = time.monotonic,
                 id: str | None = None) -> None:
        super().__init__(id=id, markup=False)
        self._compile_clock = CompileClock(clock)
        self._lines = 2

    def on_mount(self) -> None:
        self.set_interval(TICK_S, self._tick)

    def watch_view(self, view: LiveView | None) -> None:
        self._compile_clock.arrived(view)

    def _tick(self) -> None:
        if self.view is not None and self.view.compiling is not None:
            self.refresh()

    def compiling_s(self) -> float | None:
        """The waiting request's compile stall so far; the clock stops with a dead engine."""
        return self._compile_clock.stall_s(self.view, self.engine_state)

    def option_states(self) -> tuple[OptionState, ...]:
        return derive.option_states(self.requested, self.view,
                                    asked_since_start=self.options_sent_s is not None)

    def render(self) -> Text:
        width = self.content_size.width or self.app.size.width
        states = self.option_states()
        lines = [first_line(self.view, self.engine_state, self.engine_note, self.paused,
                            self.speed, self.compiling_s(), width),
                 options_line(states, width)]
        changes = changes_line(states, width)
        if changes is not None:
            lines.append(changes)
        waits = (pending_wait_parts(self.view, states, self.compiling_s(),
                                    warming_beside=self.warming_beside,
                                    asked_s=self.options_sent_s)
                 if self.engine_state == "live" else None)
        if waits is not None:
            line = Text("→ ", no_wrap=True, overflow="ellipsis")
            line.append_text(fit_parts(waits, width - 2, separators=("",)))
            line.stylize("yellow")
            line.truncate(width, overflow="ellipsis")
            lines.append(line)
        if self.switch_note:
            lines.append(switch_line(self.switch_note, width))
        if len(lines) != self._lines:   # the bar's height is auto: one more line, a relayout
            self._lines = len(lines)
            self.call_after_refresh(self.refresh, layout=True)
        return Text("\n", no_wrap=True).join(lines)
