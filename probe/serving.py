"""The serving loop: a replayer thread puts requests on a queue at their arrival times; the
engine takes them off in the calling thread, applying option changes between requests."""

from __future__ import annotations

import queue
import threading
from collections import deque
from typing import Callable

from probe.engine import Engine
from probe.options import OptConfig
from probe.records import RequestRecord
from probe.requests import EngineRequest
from workloads.replayer import ClosedLoopReplayer, OpenLoopReplayer, ScheduledRequest

POLL_S = 0.05
RATE_WINDOW_S = 30.0


class ServingLoop:
    def __init__(self, engine: Engine, replayer: OpenLoopReplayer | ClosedLoopReplayer, *,
                 on_records: Callable[[list[RequestRecord]], None] | None = None) -> None:
        self.engine = engine
        self.replayer = replayer
        self.on_records = on_records
        self._queue: queue.Queue[ScheduledRequest] = queue.Queue()
        self._pending_options: OptConfig | None = None
        self._lock = threading.Lock()
        self._arrivals: deque[float] = deque()
        self.dispatched = 0
        self.completed = 0
        self.failed = 0
        self.replay_done = threading.Event()

    # -- called from other threads -------------------------------------------------------------
    def request_options(self, options: OptConfig) -> None:
        """Takes effect before the next request, never inside one."""
        with self._lock:
            self._pending_options = options

    @property
    def queue_depth(self) -> int:
        return self._queue.qsize()

    def offered_rps(self) -> float | None:
        """Arrivals per second over the last RATE_WINDOW_S seconds of the session clock."""
        now = self.engine.clock.now_s()
        with self._lock:
            recent = [t for t in self._arrivals if t >= now - RATE_WINDOW_S]
        if len(recent) < 2:
            return None
        return len(recent) / max(now - recent[0], 1e-9)

    # -- the loop --------------------------------------------------------------------------------
    def _submit(self, scheduled: ScheduledRequest) -> None:
        with self._lock:
            self._arrivals.append(self.engine.clock.to_session_s(scheduled.scheduled_s))
            while len(self._arrivals) > 10_000:
                self._arrivals.popleft()
            self.dispatched += 1
        self._queue.put(scheduled)

    def _replay(self, stop: threading.Event) -> None:
        try:
            self.replayer.run(self._submit, stop)
        finally:
            self.replay_done.set()

    def _apply_pending_options(self) -> None:
        with self._lock:
            options, self._pending_options = self._pending_options, None
        if options is not None and options != self.engine.options:
            self.engine.set_options(options)
            if options.prewarm == "on":
                self.engine.prewarm()

    def run(self, stop: threading.Event) -> None:
        """Serve until the replay is over and the queue drained, or `stop` is set."""
        replay_thread = threading.Thread(target=self._replay, args=(stop,), name="replayer",
                                         daemon=True)
        replay_thread.start()
        while not stop.is_set():
            self._apply_pending_options()
            try:
                scheduled = self._queue.get(timeout=POLL_S)
            except queue.Empty:
                if self.replay_done.is_set() and self._queue.empty():
                    break
                continue
            records = self.engine.serve([self._engine_request(scheduled)])
            self.completed += sum(r.ok for r in records)
            self.failed += sum(not r.ok for r in records)
            if isinstance(self.replayer, ClosedLoopReplayer):
                for _ in records:
                    self.replayer.request_done()
            if self.on_records:
                self.on_records(records)
        replay_thread.join(timeout=1.0)

    def _engine_request(self, scheduled: ScheduledRequest) -> EngineRequest:
        request = scheduled.request
        return EngineRequest(
            id=request.id or f"r{scheduled.seq}", seq=scheduled.seq,
            input_length=request.input_length, output_length=request.output_length,
            arrival_s=self.engine.clock.to_session_s(scheduled.scheduled_s), text=request.text)
