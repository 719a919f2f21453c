"""The EngineLink of a replay: the engine in a child process of the dashboard, the warm switch's
side engine and a live A/B's arm B beside it (EngineClient, or a scripted handle in tests).

The dashboard only asks and hears; what the engines' lifecycle needs is decided here, on the
thread that polls: a warm side engine is cut over to as soon as it is ready, a live A/B's arm B
is given every other arrival once warm, a restart or a give-up continues the session. So start,
poll, restart and cut-over never overlap, and asks that start or stop a process (which takes a
moment) never run on the dashboard's event loop: they wait in a queue for the next poll. The
replay's own commands (options, speed, pause) go to the engine's outbox at once."""

from __future__ import annotations

import queue
import threading
import time
from collections import deque

from probe.contract import protocol
from probe.contract.engine_link import (
    ABEnd,
    ABEnded,
    ABSplit,
    ABStart,
    Ask,
    GiveUp,
    Heard,
    LinkFacts,
    Restart,
    Restarted,
    Steer,
    StopSide,
    WarmSwitch,
)
from probe.contract.protocol import (
    ArmLive,
    ArmStarted,
    CutOverDone,
    EngineHandle,
    Pause,
    ResetWindow,
    Resume,
    SaveSnapshot,
    SetOptions,
    SetSpeed,
    WarmFailed,
    WarmProgress,
    WarmReady,
)

ASK_WAIT_S = 0.05       # a poll looks at the queued asks at least this often
DIRECT = (SetOptions, SetSpeed, Pause, Resume, ResetWindow, SaveSnapshot)


class LocalLink:
    """`handle`: the engine processes (probe/engine/process/engine_process.EngineClient);
    `source`: what is replayed, shown until the engine has measured anything."""

    def __init__(self, handle: EngineHandle, source: str = "") -> None:
        self.handle = handle
        self._source = source
        self._asks: queue.SimpleQueue[Ask] = queue.SimpleQueue()
        self._heard: deque[Heard] = deque()       # said by the asks' side, before the engine's
        self._saves: queue.SimpleQueue[Heard] = queue.SimpleQueue()  # from the save threads
        self._opened = False
        self._down = False
        # what `s` and `R` can still do, read from the journal once the engine is down (not
        # at each facts(): the dashboard asks for them at every binding check)
        self._after_crash = ""
        self._ab = ""               # "" none; "warming": arm B compiles; "split": both serve
        self._tried_start = False   # the engine is started at the first poll, once

    # -- EngineLink ------------------------------------------------------------------------
    def open(self) -> None:
        self._opened = True     # the engine starts on the polling thread, at its first poll

    def send(self, ask: Ask) -> None:
        """The replay's commands go to the engine at once (its outbox never blocks), even while
        the polling thread waits on a busy engine; the rest wait for the next poll."""
        if isinstance(ask, DIRECT) and not (isinstance(ask, SaveSnapshot)
                                            and (self._down or self._ab)):
            self.handle.send(ask)
        else:
            self._asks.put(ask)

    def facts(self) -> LinkFacts:
        handle = self.handle
        if handle.log_path:
            log = f"engine log: {handle.log_path}"
        else:
            log = f"engine log: none ({handle.log_problem or 'not started yet'})"
        continues = bool(handle.journal_path) and not handle.journal_problem
        return LinkFacts(self._source, log, handle.journal_problem, self._after_crash,
                         continues)

    def close(self) -> None:
        self.handle.stop()

    def poll(self, timeout: float) -> Heard | None:
        """The next event within `timeout`; the asks queued meanwhile are carried out first."""
        deadline = time.monotonic() + timeout
        if not self._opened:
            time.sleep(timeout)
            return None
        self._start_once()
        while True:
            self._carry_out_asks()
            if self._heard:
                return self._heard.popleft()
            try:
                return self._saves.get_nowait()
            except queue.Empty:
                pass
            left = deadline - time.monotonic()
            heard = self._poll_engine(max(min(left, ASK_WAIT_S), 0.0))
            if heard is not None or left <= ASK_WAIT_S:
                return heard

    # -- the engine's side -----------------------------------------------------------------
    def _start_once(self) -> None:
        """Start the engine at the first poll; one that cannot start is said once (`R`
        restarts it)."""
        if self._tried_start:
            return
        self._tried_start = True
        try:
            self.handle.start()
        except Exception as exc:     # a failed spawn is said, never a crash
            self._fail(f"could not start: {type(exc).__name__}: {exc}")

    def _fail(self, text: str) -> None:
        """Say that the engine is down (`text`), as its event would."""
        self._heard.append(protocol.EngineFailed(text))
        self._fall()

    def _fall(self) -> None:
        """The engine is down: what `s` and `R` can still do, read from its journal now."""
        self._down = True
        try:
            self._after_crash = self.handle.journal_promise().after_crash()
        except Exception:       # an unreadable journal: nothing promised
            self._after_crash = ""

    def _poll_engine(self, timeout: float) -> Heard | None:
        handle = self.handle
        event = handle.poll(timeout)
        if isinstance(event, WarmReady) and self._ab == "warming":
            handle.ab_split()
            self._ab = "split"
            return ABSplit(event.shapes, event.seconds)
        if isinstance(event, WarmReady):
            handle.cut_over()
            self._down, self._after_crash = False, ""
            return CutOverDone(event.shapes, event.seconds)
        if isinstance(event, WarmFailed) and self._ab:
            self._ab = ""               # the handle ended the A/B: A serves everything
            return ABEnded("failed", event.error)
        if isinstance(event, (WarmProgress, WarmFailed, ArmLive, ArmStarted)):
            return event
        if event is None and not self._down and not handle.is_alive():
            event = handle.poll(0.0) or protocol.EngineFailed("the engine process exited")
        if event is None:
            if self._down:      # a dead engine's poll may return at once: don't spin
                time.sleep(timeout)
            return None
        if isinstance(event, protocol.EngineFailed):
            if self._down:
                return None
            self._fall()
            if self._ab:
                self._ab = ""
                self._heard.append(ABEnded("failed", "the serving engine stopped"))
        return event

    # -- the asks --------------------------------------------------------------------------
    def _carry_out_asks(self) -> None:
        while True:
            try:
                ask = self._asks.get_nowait()
            except queue.Empty:
                return
            try:
                self._carry_out(ask)
            except Exception as exc:    # a failed ask is said; the link goes on
                self._fail(f"{type(ask).__name__} failed: {type(exc).__name__}: {exc}")

    def _carry_out(self, ask: Ask) -> None:
        handle = self.handle
        if isinstance(ask, WarmSwitch):
            handle.warm_switch(ask.options)
        elif isinstance(ask, StopSide):
            handle.stop_side()
        elif isinstance(ask, ABStart):
            handle.ab_start(ask.options)
            self._ab = "warming"
        elif isinstance(ask, ABEnd):
            if not self._ab:
                return
            self._ab = ""
            if ask.adopt:
                handle.ab_adopt()
            else:
                handle.ab_keep()
            self._heard.append(ABEnded("adopt" if ask.adopt else "keep"))
        elif isinstance(ask, (Restart, GiveUp)):
            self._restart(ask)
        elif isinstance(ask, SaveSnapshot) and (self._down or self._ab):
            self._save_from_journal(ask.path, serving=bool(self._ab) and not self._down)
        elif isinstance(ask, Steer):
            return              # one dashboard, one engine: it always steers
        else:
            handle.send(ask)

    def _restart(self, ask: Restart | GiveUp) -> None:
        if isinstance(ask, GiveUp):
            self.handle.send(protocol.SetOptions(ask.options))
        if self._ab:
            self._ab = ""
            self._heard.append(ABEnded("keep"))
        try:
            if isinstance(ask, GiveUp):
                self.handle.restart(ask.compiling)
            else:
                self.handle.restart()
        except Exception as exc:
            self._fail(f"restart failed: {type(exc).__name__}: {exc}")
            return
        self._down, self._after_crash = False, ""
        self._heard.append(Restarted())

    def _save_from_journal(self, path: str, *, serving: bool) -> None:
        """The engine is down, or two engines serve a live A/B (`serving`): the session JSON
        is written from its journal, on a thread of its own (a long session's journal takes
        a moment to read, and the engines' events must go on)."""
        def save() -> None:
            try:
                self.handle.write_snapshot(path, serving=serving)
            except OSError as exc:
                self._saves.put(protocol.SnapshotFailed(path, f"{exc.strerror or exc}"))
            except Exception as exc:    # an unreadable journal: said, never a crash
                self._saves.put(protocol.SnapshotFailed(path, f"{exc}"))
            else:
                self._saves.put(protocol.SnapshotSaved(path))

        threading.Thread(target=save, name="save from the journal", daemon=True).start()
