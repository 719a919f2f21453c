"""What the engine says, as the dashboard takes it: each event the engine link hears (one
message, tui/messages.py, dispatched here by its type), turned into the dashboard's state and
its notifications. The live A/B's events are tui/ab_actions.py's."""

from __future__ import annotations

from typing import Any, Callable

from textual import on
from textual.notifications import SeverityLevel
from textual.worker import Worker, WorkerState

from probe.contract.engine_link import (
    ABEnded,
    ABSplit,
    ArmLive,
    ArmStarted,
    CutOverDone,
    EngineFailed,
    EngineLive,
    EngineLoading,
    ReplayFinished,
    Restarted,
    Role,
    SnapshotFailed,
    SnapshotSaved,
    WarmFailed,
    WarmProgress,
)
from tui.dashboard_state import DashboardState
from tui.messages import EngineHeard
from tui.warm_switch import warm_line

SPEED_ECHO_S = 1.5      # a live view built before the engine took a new speed may still come
NOTICE_SEVERITY: dict[str, SeverityLevel] = {"info": "information", "warning": "warning",
                                             "error": "error"}


class EngineEvents(DashboardState):
    def on_engine_heard(self, message: EngineHeard) -> None:
        handler = self._handlers().get(type(message.heard))
        if handler is not None:
            handler(message.heard)

    def _handlers(self) -> dict[type, Callable[[Any], None]]:
        return {EngineLive: self.on_engine_live, EngineLoading: self.on_engine_loading,
                EngineFailed: self.on_engine_failed, Restarted: self.on_engine_restarted,
                ReplayFinished: self.on_replay_finished, SnapshotSaved: self.on_snapshot_saved,
                SnapshotFailed: self.on_snapshot_failed, Role: self.on_role,
                WarmProgress: self.on_warm_switch_event, WarmFailed: self.on_warm_switch_event,
                CutOverDone: self.on_warm_switch_event, ArmStarted: self.on_ab_event,
                ArmLive: self.on_ab_event, ABSplit: self.on_ab_event, ABEnded: self.on_ab_event}

    def on_engine_live(self, message: EngineLive) -> None:
        previous, self.view = self.view, message.view
        self._view_at = self._clock()
        if not self.steering:               # another dashboard changes what is served
            self.requested = message.view.options
        self.ab_saw_a(message.view)
        self._show_switch()
        if previous is not None and message.view.t_s < previous.t_s:
            self._notices_seen_s = float("-inf")    # a fresh engine: a new session clock
            if self.options_sent_s != float("inf"):
                self.options_sent_s = None          # it started with the options sent last
        if self.engine_state in ("starting", "loading"):
            self.engine_state = "live"
        if self._clock() - self._speed_sent_at > SPEED_ECHO_S:
            self.speed = message.view.replay.speed  # the engine's: it may have chosen it
        for notice in message.view.notices:
            if notice.t_s > self._notices_seen_s:
                self.say(notice.text, severity=NOTICE_SEVERITY.get(notice.level, "information"))
                self._notices_seen_s = notice.t_s

    def on_engine_loading(self, message: EngineLoading) -> None:
        shape = f" · {self.trace_shape}" if self.trace_shape else ""
        self.engine_state, self.engine_note = "loading", message.text + shape

    def on_engine_failed(self, message: EngineFailed) -> None:
        self.engine_state, self.engine_note = "failed", message.error
        facts = self.facts()
        after = facts.after_crash if facts is not None else ""
        self.say(f"the engine stopped: {message.error}. {after}", severity="error", timeout=15)

    def on_engine_restarted(self, _: Restarted) -> None:
        self._another_engine_serves()
        if self._warming():                 # a restart stops the side engine too
            self._warm = None
            self._show_switch()

    def on_role(self, role: Role) -> None:
        """Who steers a server (or why an ask was refused): a watcher's staged change and
        pending switch are dropped, its options follow what is served."""
        self.steering = role.steering
        self.role_text = role.text
        if not role.steering:
            self._warm = None
            if self.view is not None:
                self.requested = self.view.options
        self._show_switch()
        self.say(role.text, severity="information" if role.steering else "warning")
        self.refresh_bindings()

    def on_replay_finished(self, _: ReplayFinished) -> None:
        self.engine_state = "finished"
        self.say("the replay ran out of requests")

    def on_snapshot_saved(self, message: SnapshotSaved) -> None:
        self.say(f"session saved: {message.path}")

    def on_snapshot_failed(self, message: SnapshotFailed) -> None:
        self.say(f"could not save the session to {message.path}: {message.error}",
                 severity="error")

    def watch_engine_state(self) -> None:
        self.refresh_bindings()

    @on(Worker.StateChanged)
    def _worker_failed(self, event: Worker.StateChanged) -> None:
        if event.state == WorkerState.ERROR:
            self.engine_state, self.engine_note = "failed", f"reader: {event.worker.error}"
            self.say(f"lost the engine: {event.worker.error}", severity="error")

    def on_warm_switch_event(self, event: WarmProgress | WarmFailed | CutOverDone) -> None:
        switch = self._warm
        if switch is None:
            return
        if isinstance(event, WarmProgress):
            self._warm = switch.progressed(event.shapes)
        elif isinstance(event, WarmFailed):
            self._warm = None
            if self.view is not None:
                self.requested = self.view.options
            self.say(f"warm switch to {switch.target.label()} failed: {event.error}; "
                     f"{switch.serving_id} serves on", severity="error")
        elif isinstance(event, CutOverDone):
            self._warm = switch.done(self._engine_now_s(), event.seconds, event.shapes,
                                     self.view)
            self.options_sent_s = None      # the side engine started with these options
            self._another_engine_serves()
            self.say(warm_line(self._warm, self.view, self._engine_now_s()))
        self._show_switch()
