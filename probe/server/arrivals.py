"""HTTP requests as the serving loop's arrivals: a replayer whose trace is whatever clients
send. Each request is due the moment it arrived (its queue time starts there, as a replayed
request's starts at its trace time), and `run` hands it to the loop as it comes. Torch-free."""

from __future__ import annotations

import queue
import threading
import time
from typing import Callable

from workloads.replayer import MAX_WAIT_S, ReplayerBase, ScheduledRequest, Submit
from workloads.trace_records import TraceRequest


class LiveArrivals(ReplayerBase):
    """The Replayer of `infertop serve`: open loop (an arrival waits for nothing), no end
    until `close` (a drain); paused, it holds what arrives until resumed."""

    def __init__(self, clock: Callable[[], float] = time.perf_counter) -> None:
        super().__init__(None, clock)
        self._inbox: queue.SimpleQueue[ScheduledRequest] = queue.SimpleQueue()
        self._closed = threading.Event()

    @property
    def backlog(self) -> int:
        """Arrived, not yet handed to the loop."""
        return self._inbox.qsize()

    def arrive(self, request: TraceRequest, at: float | None = None) -> ScheduledRequest:
        """A request arrived `at` (this clock's time; default now): the loop takes it at
        once, and its queue time starts there."""
        with self._lock:
            scheduled = ScheduledRequest(self._dispatched, request,
                                         self._clock() if at is None else at)
            self._dispatched += 1
        self._inbox.put(scheduled)
        return scheduled

    def close(self) -> None:
        """No more arrivals: `run` returns once it has handed over what came."""
        self._closed.set()

    def run(self, submit: Submit, stop: threading.Event) -> None:
        while not stop.is_set():
            if self._paused:
                stop.wait(MAX_WAIT_S)
                continue
            try:
                submit(self._inbox.get(timeout=MAX_WAIT_S))
            except queue.Empty:
                if self._closed.is_set():
                    return
