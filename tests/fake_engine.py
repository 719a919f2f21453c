"""A scripted engine for the tests, in place of the real
`probe.engine.process.engine_process.EngineClient`: the app codes against
`probe.contract.protocol.EngineHandle` only. Import-light on purpose: no torch, no Textual.
"""

from __future__ import annotations

import queue
import threading
import time
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Received:
    command: Any
    at: float                             # time.perf_counter() when send() was called


class FakeEngine:
    """An engine that serves scripted events and records every command with its arrival time.

    `hold()` makes `poll` block (as a reader stuck on a busy engine would) until `release()`.
    `die(error, exit_code)` makes the next poll return EngineFailed once and `is_alive()`
    false; given `journal_path`, `write_snapshot` saves from that journal as the real one does.
    """

    def __init__(self, events: tuple[Any, ...] = (), *, replies: bool = True,
                 journal_path: str | None = None) -> None:
        self._events: queue.Queue[Any] = queue.Queue()
        for event in events:
            self._events.put(event)
        self._replies = replies
        self._lock = threading.Lock()
        self._received: list[Received] = []
        self._released = threading.Event()
        self._released.set()
        self.alive = False
        self.starts = 0
        self.restarts = 0
        self.warm_asks: list[Any] = []        # the options of every warm switch asked for
        self.cut_overs = 0
        self.sides_stopped = 0
        self.ab = ""                          # the live A/B: "", "warming", "split"
        self.ab_asks: list[Any] = []
        self.ab_ends: list[str] = []          # "adopt" / "keep", in order
        self.stopped = False
        self.log_path: str | None = None
        self.log_problem: str | None = "a fake engine keeps no log"
        self.journal_path = journal_path      # a journal a test wrote, for write_snapshot
        self.journal_problem: str | None = None   # set to script a state folder that takes none
        self.ended: Any = None                # how it died (EngineExit), once it did

    # -- EngineHandle ------------------------------------------------------------------------
    def start(self) -> None:
        self.starts += 1
        self.alive = True

    def send(self, command: Any) -> None:
        with self._lock:
            self._received.append(Received(command, time.perf_counter()))
        if self._replies:
            self._reply(command)

    def poll(self, timeout: float) -> Any:
        self._released.wait()
        try:
            return self._events.get(timeout=timeout)
        except queue.Empty:
            return None

    def is_alive(self) -> bool:
        return self.alive

    def restart(self, abandoned=None) -> None:
        self.restarts += 1
        self.abandoned = abandoned
        self.alive = True

    def stop(self) -> None:
        self.stopped = True
        self.alive = False

    def write_snapshot(self, path: str, *, serving: bool = False) -> Any:
        from probe.common.errors import BadInput
        from probe.session_store.journal_reader import save_from_journal
        if self.journal_path is None:
            raise BadInput("a fake engine keeps no journal")
        return save_from_journal(self.journal_path, path, self.ended, serving=serving)

    def open_journal(self) -> str | None:
        return self.journal_problem

    def journal_promise(self) -> Any:
        from probe.session_store.journal_promise import journal_promise
        return journal_promise(self.journal_path,
                               self.journal_problem or "a fake engine keeps no journal")

    def warm_switch(self, options: Any) -> None:
        self.warm_asks.append(options)

    def cut_over(self) -> None:
        self.cut_overs += 1

    def stop_side(self) -> None:
        self.sides_stopped += 1

    def ab_start(self, options: Any) -> None:
        self.ab_asks.append(options)
        self.ab = "warming"

    def ab_running(self) -> bool:
        return bool(self.ab)

    def ab_split(self) -> None:
        self.ab = "split"

    def ab_adopt(self) -> None:
        self.ab, self.ab_ends = "", self.ab_ends + ["adopt"]

    def ab_keep(self) -> None:
        self.ab, self.ab_ends = "", self.ab_ends + ["keep"]

    # -- scripting ---------------------------------------------------------------------------
    def emit(self, event: Any) -> None:
        self._events.put(event)

    def die(self, error: str, exit_code: int | None = None) -> None:
        from probe.contract.protocol import EngineExit, EngineFailed
        self.alive = False
        self.ended = EngineExit(time.time(), exit_code, error)
        self._events.put(EngineFailed(error))

    def hold(self) -> None:
        self._released.clear()

    def release(self) -> None:
        self._released.set()

    @property
    def received(self) -> list[Received]:
        with self._lock:
            return list(self._received)

    def commands(self, kind: type | None = None) -> list[Any]:
        return [r.command for r in self.received if kind is None or isinstance(r.command, kind)]

    def _reply(self, command: Any) -> None:
        from probe.contract.protocol import SaveSnapshot, SnapshotSaved
        if isinstance(command, SaveSnapshot):
            self._events.put(SnapshotSaved(command.path))
