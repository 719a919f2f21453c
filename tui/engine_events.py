"""What the engine says, as the dashboard takes it: each event the engine link hears (one
message, tui/messages.py) dispatched by its type in one table, turned into the dashboard's
state and its notifications. The warm switch's and the live A/B's events go to their runs
(tui/warm_switch_run.py, tui/live_ab_run.py)."""

from __future__ import annotations

from typing import Any, Callable

from textual.notifications import SeverityLevel

from probe.contract.engine_link import (
    ABEnded,
    ABSplit,
    ArmLive,
    ArmStarted,
    CutOverDone,
    EngineFailed,
    EngineLive,
    EngineLoading,
    Heard,
    ReplayFinished,
    Restarted,
    Role,
    SnapshotFailed,
    SnapshotSaved,
    WarmFailed,
    WarmProgress,
)
from tui.engine_side import EngineSide
from tui.host import Host
from tui.live_ab_run import LiveABRun
from tui.warm_switch_run import WarmSwitchRun

SPEED_ECHO_S = 1.5      # a live view built before the engine took a new speed may still come
NOTICE_SEVERITY: dict[str, SeverityLevel] = {"info": "information", "warning": "warning",
                                             "error": "error"}


class EngineEvents:
    def __init__(self, host: Host, engine: EngineSide, warm: WarmSwitchRun,
                 ab: LiveABRun) -> None:
        self.host = host
        self.engine = engine
        self.warm = warm
        self.ab = ab
        self._notices_seen_s = float("-inf")
        self._handlers: dict[type, Callable[[Any], None]] = {
            EngineLive: self.live, EngineLoading: self.loading, EngineFailed: self.failed,
            Restarted: self.restarted, ReplayFinished: self.replay_finished,
            SnapshotSaved: self.snapshot_saved, SnapshotFailed: self.snapshot_failed,
            Role: self.role, WarmProgress: warm.heard, WarmFailed: warm.heard,
            CutOverDone: warm.heard, ArmStarted: ab.heard, ArmLive: ab.heard,
            ABSplit: ab.heard, ABEnded: ab.heard}

    def heard(self, heard: Heard) -> None:
        handler = self._handlers.get(type(heard))
        if handler is not None:
            handler(heard)

    def live(self, message: EngineLive) -> None:
        host = self.host
        previous, host.view = host.view, message.view
        self.engine.view_at = self.engine.clock()
        if not host.steering:               # another dashboard changes what is served
            host.requested = message.view.options
        self.ab.saw_a(message.view)
        host.show_switch()
        if previous is not None and message.view.t_s < previous.t_s:
            self._notices_seen_s = float("-inf")    # a fresh engine: a new session clock
            if host.options_sent_s != float("inf"):
                host.options_sent_s = None          # it started with the options sent last
        if host.engine_state in ("starting", "loading"):
            host.engine_state = "live"
        if self.engine.clock() - self.engine.speed_sent_at > SPEED_ECHO_S:
            host.speed = message.view.replay.speed  # the engine's: it may have chosen it
        for notice in message.view.notices:
            if notice.t_s > self._notices_seen_s:
                host.say(notice.text, severity=NOTICE_SEVERITY.get(notice.level, "information"))
                self._notices_seen_s = notice.t_s

    def loading(self, message: EngineLoading) -> None:
        shape = f" · {self.engine.trace_shape}" if self.engine.trace_shape else ""
        self.host.engine_state, self.host.engine_note = "loading", message.text + shape

    def failed(self, message: EngineFailed) -> None:
        self.host.engine_state, self.host.engine_note = "failed", message.error
        facts = self.engine.facts()
        after = facts.after_crash if facts is not None else ""
        self.host.say(f"the engine stopped: {message.error}. {after}", severity="error",
                      timeout=15)

    def reader_failed(self, error: BaseException | None) -> None:
        """A worker of the app's ended in an error: the engine's reader, as a rule."""
        self.host.engine_state, self.host.engine_note = "failed", f"reader: {error}"
        self.host.say(f"lost the engine: {error}", severity="error")

    def restarted(self, _: Restarted) -> None:
        self.engine.another_engine_serves()
        self.warm.forget(cut_over=False)    # a restart stops the side engine too

    def role(self, role: Role) -> None:
        """Who steers a server (or why an ask was refused): a watcher's staged change and
        pending switch are dropped, its options follow what is served."""
        host = self.host
        host.steering = role.steering
        host.role_text = role.text
        if not role.steering:
            self.warm.under_way = None
            if host.view is not None:
                host.requested = host.view.options
        host.show_switch()
        host.say(role.text, severity="information" if role.steering else "warning")
        host.refresh_bindings()

    def replay_finished(self, _: ReplayFinished) -> None:
        self.host.engine_state = "finished"
        self.host.say("the replay ran out of requests")

    def snapshot_saved(self, message: SnapshotSaved) -> None:
        self.host.say(f"session saved: {message.path}")

    def snapshot_failed(self, message: SnapshotFailed) -> None:
        self.host.say(f"could not save the session to {message.path}: {message.error}",
                      severity="error")
