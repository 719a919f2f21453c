"""The engine reader: on a worker thread of its own, start the engine, poll it, restart it when
asked, and post what it reads as the dashboard's messages, so the event loop never waits on
the engine. Start, poll, restart and the warm switch's cut-over never overlap: all run here."""

from __future__ import annotations

import threading
from typing import Any, Callable

from textual.message import Message
from textual.worker import Worker

from probe.contract import protocol
from probe.contract.protocol import (
    ArmLive,
    ArmStarted,
    CutOverDone,
    EngineHandle,
    WarmFailed,
    WarmProgress,
    WarmReady,
)
from probe.contract.records import CompileInProgress
from tui.live_ab import ABEnded, ABEvent
from tui.messages import (
    EngineFailed,
    EngineLive,
    EngineLoading,
    EngineRestarted,
    ReplayFinished,
    SnapshotFailed,
    SnapshotSaved,
)
from tui.warm_switch import WarmSwitchEvent

POLL_S = 0.2


class EngineReader:
    """`post`: the app's thread-safe post_message; `stopping` ends the reading, `restart` asks
    for a restart at the next poll."""

    def __init__(self, engine: EngineHandle, post: Callable[[Message], object],
                 stopping: threading.Event, restart: threading.Event,
                 abandoned: Callable[[], CompileInProgress | None] = lambda: None,
                 ab_end: Callable[[], str | None] = lambda: None) -> None:
        """`abandoned`: the compile `x` gave up, taken once at the restart it asked for;
        `ab_end`: how the user ended a live A/B ("adopt" or "keep"), taken once."""
        self.engine, self.post = engine, post
        self._stopping, self._restart = stopping, restart
        self._abandoned = abandoned
        self._ab_end = ab_end

    def run(self, worker: Worker[None]) -> None:
        """Until the worker is cancelled or the dashboard stops."""
        engine = self.engine
        try:
            engine.start()
            down = False
        except Exception as exc:  # a failed spawn is shown, never a crash
            self.post(EngineFailed(f"could not start: {type(exc).__name__}: {exc}"))
            down = True
        while not (worker.is_cancelled or self._stopping.is_set()):
            try:
                down = self._read_once(down)
            except Exception as exc:  # a broken pipe or a bad message: say so, keep going
                if not down:
                    self.post(EngineFailed(f"lost the engine: {type(exc).__name__}: {exc}"))
                down = True
                self._stopping.wait(POLL_S)

    def _read_once(self, down: bool) -> bool:
        """One poll; returns whether the engine is down."""
        engine = self.engine
        if self._restart.is_set():
            self._restart.clear()
            down = self._restart_engine()
        ended = self._ab_end()
        if ended is not None:       # adopt: arm B serves on (the warm switch's cut over)
            if ended == "adopt":
                engine.ab_adopt()
            else:
                engine.ab_keep()
            self.post(ABEvent(ABEnded(ended)))
        event = engine.poll(POLL_S)
        if isinstance(event, WarmReady) and engine.ab_running():
            engine.ab_split()
            self.post(ABEvent(event))
            return down
        if isinstance(event, (ArmLive, ArmStarted)):
            self.post(ABEvent(event))
            return down
        if isinstance(event, WarmReady):    # cut over here: start/poll/restart never overlap
            engine.cut_over()
            event = CutOverDone(event.shapes, event.seconds)
        if isinstance(event, (WarmProgress, WarmFailed, CutOverDone)):
            self.post(WarmSwitchEvent(event))
            return False if isinstance(event, CutOverDone) else down
        if event is None and not down and not engine.is_alive():
            event = engine.poll(0.0) or protocol.EngineFailed("the engine process exited")
        if event is None:
            if down:  # a dead engine's poll may return at once: don't spin
                self._stopping.wait(POLL_S)
            return down
        if isinstance(event, protocol.EngineFailed):
            if down:
                return down
            down = True
        message = message_for(event)
        if message is not None:
            self.post(message)
        return down

    def _restart_engine(self) -> bool:
        """True: still down."""
        try:
            abandoned = self._abandoned()
            if abandoned is not None:
                self.engine.restart(abandoned)
            else:
                self.engine.restart()
        except Exception as exc:
            self.post(EngineFailed(f"restart failed: {type(exc).__name__}: {exc}"))
            return True
        self.post(EngineRestarted())
        return False


def message_for(event: Any) -> Message | None:
    """The dashboard's message for an engine event, of the same name (None: not one the
    dashboard shows)."""
    if isinstance(event, protocol.EngineLive):
        return EngineLive(event.view)
    if isinstance(event, protocol.EngineLoading):
        return EngineLoading(event.text)
    if isinstance(event, protocol.EngineFailed):
        return EngineFailed(event.error)
    if isinstance(event, protocol.SnapshotSaved):
        return SnapshotSaved(event.path)
    if isinstance(event, protocol.SnapshotFailed):
        return SnapshotFailed(event.path, event.error)
    if isinstance(event, protocol.ReplayFinished):
        return ReplayFinished()
    return None
