"""What the dashboard needs from an engine, and a scripted stand-in for tests and screenshots.

The real one is `probe.engine_process.EngineClient`; the app codes against `EngineHandle` only.
Import-light on purpose: no torch, no Textual.
"""

from __future__ import annotations

import queue
import threading
import time
from dataclasses import dataclass
from typing import Any, Protocol


class EngineHandle(Protocol):
    log_path: str | None                  # the running engine's log (a fresh one per start)
    log_problem: str | None               # why there is no log, when there is none

    def start(self) -> None: ...          # spawn the engine process (returns at once)
    def send(self, command: Any) -> None: ...  # never blocks, never raises if the engine died
    def poll(self, timeout: float) -> Any: ...  # next Event, or None after timeout
    def is_alive(self) -> bool: ...
    def restart(self) -> None: ...        # kill if needed, start fresh with the last options sent
    def stop(self) -> None: ...           # Shutdown + join + terminate if needed


@dataclass(frozen=True)
class Received:
    command: Any
    at: float                             # time.perf_counter() when send() was called


class FakeEngine:
    """An engine that serves scripted events and records every command with its arrival time.

    `hold()` makes `poll` block (as a reader stuck on a busy engine would) until `release()`.
    `die(error)` makes the next poll return EngineFailed once and `is_alive()` false.
    """

    def __init__(self, events: tuple[Any, ...] = (), *, replies: bool = True) -> None:
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
        self.stopped = False
        self.log_path: str | None = None
        self.log_problem: str | None = "a fake engine keeps no log"

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

    def restart(self) -> None:
        self.restarts += 1
        self.alive = True

    def stop(self) -> None:
        self.stopped = True
        self.alive = False

    # -- scripting ---------------------------------------------------------------------------
    def emit(self, event: Any) -> None:
        self._events.put(event)

    def die(self, error: str) -> None:
        from probe.protocol import EngineFailed
        self.alive = False
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
        from probe.protocol import SaveSnapshot, SnapshotSaved
        if isinstance(command, SaveSnapshot):
            self._events.put(SnapshotSaved(command.path))
