"""What the dashboard holds: the reactives its panels bind to (the live view, the options asked
for, the replay's speed, the engine's state), the engine link (probe/contract/engine_link.py:
whatever the transport), the warm switch under way; and what its keys and its engine's events both use:
a notification, a command sent, the engine's clock now, the warm switch's line.

tui/key_actions.py (the keys) and tui/engine_events.py (what the engine says) build on it, and
tui/app.py puts the two together."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Callable

from textual.app import App
from textual.notifications import SeverityLevel
from textual.reactive import reactive
from textual.timer import Timer

from probe.contract.engine_link import (
    ABEnded,
    ABSplit,
    ArmLive,
    ArmStarted,
    Ask,
    EngineLink,
    LinkFacts,
    Pause,
    SetSpeed,
)
from probe.contract.live import LiveView
from probe.contract.options import OptConfig
from tui.fit_line import Part, part
from tui.live_ab import LiveAB, ab_line
from tui.warm_switch import SwitchUnderWay, switch_on_parts, warm_parts

APPLY_DELAY_S = 1.0     # toggles are sent once no key has been pressed for this long


class DashboardState(App[int]):
    view: reactive[LiveView | None] = reactive(None, init=False)
    requested: reactive[OptConfig] = reactive(OptConfig, init=False)
    # Session time the engine was sent `requested`; inf while it waits for keys to settle.
    options_sent_s: reactive[float | None] = reactive(None, init=False)
    # None until the engine picked the rate (half its measured capacity); then the engine's
    speed: reactive[float | None] = reactive(None, init=False)
    paused: reactive[bool] = reactive(False, init=False)
    engine_state: reactive[str] = reactive("starting", init=False)
    engine_note: reactive[str] = reactive("", init=False)
    # (not `switch_mode`: that is Textual's App.switch_mode, its screen modes' API)
    switch_kind: reactive[str] = reactive("cold", init=False)    # or "warm"
    # the warm switch's line, or the A/B's parts (shortened by meaning: tui/fit_line.py)
    switch_note: reactive[str | tuple[Part, ...]] = reactive("", init=False)
    warming_beside: reactive[str] = reactive("", init=False)     # serving id while a side warms

    def __init__(self, link: EngineLink | None, *, initial: LiveView | None = None,
                 options: OptConfig, snapshot_dir: Path, speed: float | None,
                 read_only: bool = False,
                 source: str = "", clock: Callable[[], float] = time.monotonic,
                 apply_delay_s: float = APPLY_DELAY_S) -> None:
        super().__init__()
        self.link = link
        self.read_only = read_only or link is None
        self.snapshot_dir = Path(snapshot_dir)
        self._clock = clock
        self._apply_delay_s = apply_delay_s
        self._apply_timer: Timer | None = None
        self._view_at = clock()
        self._stopping = threading.Event()
        self.reader_stopped = threading.Event()
        self._notices_seen_s = float("-inf")
        self._warm: SwitchUnderWay | None = None
        self._ab: LiveAB | None = None          # the live A/B (tui/ab_actions.py)
        self.steering = True                    # False: another dashboard steers this server
        self.role_text = ""                     # the server's word on who steers
        self.set_reactive(DashboardState.view, initial)
        self.set_reactive(DashboardState.requested, options)
        self.set_reactive(DashboardState.speed, speed)
        self._speed_sent_at = float("-inf")
        if self.read_only:
            state = "read-only"
        else:
            state = "live" if initial is not None else "starting"
        facts = None if link is None else link.facts()
        # something useful from the first frame: the trace's shape while the engine loads
        self.trace_shape = "" if facts is None else facts.source
        # attached to a server: every change is a warm switch, the clients set the load
        self.on_server = facts is not None and facts.remote
        self.set_reactive(DashboardState.engine_state, state)
        self.set_reactive(DashboardState.engine_note,
                          source or (self.trace_shape if state == "starting" else ""))
        if link is None:
            self.reader_stopped.set()
        elif self.on_server:
            self.set_reactive(DashboardState.switch_kind, "warm")

    def facts(self) -> LinkFacts | None:
        return None if self.link is None else self.link.facts()

    def _another_engine_serves(self) -> None:
        """A restarted, cut-over or adopted engine starts with its launch's speed, unpaused:
        it is told the replay's speed and pause as the dashboard holds them."""
        self.engine_state, self.engine_note = "starting", ""
        if self.speed is not None:
            self._send(SetSpeed(self.speed))
        if self.paused:
            self._send(Pause())

    def ab_saw_a(self, view: LiveView) -> None:
        """Arm A's live view, for a live A/B (tui/ab_actions.py)."""

    def on_ab_event(self, event: ArmStarted | ArmLive | ABSplit | ABEnded) -> None:
        """The live A/B's events (tui/ab_actions.py)."""

    def say(self, message: str, *, severity: SeverityLevel = "information",
            timeout: float | None = None) -> None:
        """A notification. Paths, error messages and engine notices are data, never markup:
        a folder named `runs[/]` must not end the session."""
        self.notify(message, severity=severity, timeout=timeout, markup=False)

    def _send(self, ask: Ask) -> None:
        if self.link is not None:
            self.link.send(ask)

    def _engine_now_s(self) -> float:
        """The engine's session clock now, from the latest live view and the time since."""
        if self.view is None:
            return 0.0
        return self.view.t_s + max(self._clock() - self._view_at, 0.0)

    def _warming(self) -> bool:
        return self._warm is not None and self._warm.cut_over_s is None

    def _show_switch(self) -> None:
        switch, ab = self._warm, self._ab
        self.warming_beside = switch.serving_id if switch is not None and self._warming() else ""
        if not self.steering:
            self.switch_note = (part(self.role_text, "watching", 9),
                                part("T takes over once nobody steers", "T: take over", 8))
        elif ab is not None:
            self.switch_note = ab_line(ab, self._engine_now_s())
        elif switch is not None:
            self.switch_note = warm_parts(switch, self.view, self._engine_now_s())
        elif self.switch_kind == "warm":
            self.switch_note = switch_on_parts(server=self.on_server)
        else:
            self.switch_note = ""
