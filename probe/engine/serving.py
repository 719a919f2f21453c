"""The serving loop: a replayer thread puts requests on a queue at their arrival times; the
engine takes them off in the calling thread, applying option changes between requests."""

from __future__ import annotations

import queue
import threading
import time
from collections import deque
from typing import Callable

from probe.analysis.live_figures import offered_rps
from probe.contract.options import OptConfig
from probe.contract.records import RequestRecord
from probe.engine.continuous_scheduler import ContinuousScheduler
from probe.engine.engine import Engine
from probe.engine.model.requests import EngineRequest
from workloads.replayer import Replayer, ScheduledRequest

POLL_S = 0.05


class ServingLoop:
    def __init__(self, engine: Engine, replayer: Replayer, *,
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
        self._held = 0
        self.last_requested: OptConfig | None = None
        self.replay_done = threading.Event()
        # The live A/B: takes the arrivals it returns True for (arm B's) before the queue does,
        # so arm A's offered load counts only its own (probe/engine/process/ab_split.py).
        self.divert: Callable[[ScheduledRequest], bool] | None = None
        # After each continuous step (`infertop serve`): stream the tokens made so far and
        # take out the requests whose client left; returns the records of those it took out.
        self.after_step: Callable[[ContinuousScheduler], list[RequestRecord]] | None = None
        self._pending_swap: Callable[[Engine], Engine] | None = None

    # -- called from other threads -------------------------------------------------------------
    def request_options(self, options: OptConfig) -> None:
        """Takes effect before the next request, never inside one."""
        with self._lock:
            self._pending_options = options
            self.last_requested = options

    def request_engine(self, swap: Callable[[Engine], Engine]) -> None:
        """A warm switch's cut over (`infertop serve`): at the next boundary with no request
        running (continuous batching finishes its slots first, taking no new request),
        `swap(engine)` is called on the serving thread and returns the engine that serves from
        then on."""
        with self._lock:
            self._pending_swap = swap

    def withdraw_engine(self) -> bool:
        """The cut over asked for is given up; False if it already happened."""
        with self._lock:
            pending, self._pending_swap = self._pending_swap, None
        return pending is not None

    @property
    def options_pending(self) -> bool:
        """Options received and not applied yet (continuous batching drains its slots first),
        or a cut over asked for."""
        with self._lock:
            pending, swap = self._pending_options, self._pending_swap
        return swap is not None or (pending is not None and pending != self.engine.options)

    @property
    def queue_depth(self) -> int:
        """Waiting to be served: on the queue, or taken and waiting for KV blocks."""
        return self._queue.qsize() + self._held

    def offered_rps(self) -> float | None:
        """Arrivals per second over the last window of the session clock (live.offered_rps)."""
        with self._lock:
            arrivals = list(self._arrivals)
        return offered_rps(arrivals, self.engine.clock.now_s())

    # -- the loop --------------------------------------------------------------------------------
    def _submit(self, scheduled: ScheduledRequest) -> None:
        divert = self.divert
        if divert is not None and divert(scheduled):
            with self._lock:
                self.dispatched += 1
            return
        with self._lock:
            self._arrivals.append(self.engine.clock.to_session_s(scheduled.scheduled_s))
            while len(self._arrivals) > 10_000:
                self._arrivals.popleft()
            self.dispatched += 1
        self._queue.put(scheduled)

    def carry(self, requests: list[ScheduledRequest]) -> None:
        """Requests a stopped engine held (already dispatched and journaled): queued first, in
        their order, with their own arrival times; not counted as dispatched again."""
        with self._lock:
            for scheduled in requests:
                self._arrivals.append(self.engine.clock.to_session_s(scheduled.scheduled_s))
        for scheduled in requests:
            self._queue.put(scheduled)

    def split_queue(self) -> int:
        """The live A/B's split applies to the queue too: each request waiting passes through
        `divert` in its order, so both arms start with half the backlog instead of arm A
        keeping all of it. Returns how many it handed over."""
        divert, handed = self.divert, 0
        for scheduled in self._take_now(self._queue.qsize()):
            if divert is not None and divert(scheduled):
                handed += 1
            else:
                self._queue.put(scheduled)
        return handed

    def _replay(self, stop: threading.Event) -> None:
        try:
            self.replayer.run(self._submit, stop)
        finally:
            self.replay_done.set()

    def _apply_options(self, *, starting: bool = False) -> None:
        """Between requests: the options asked for, and prewarm when they ask for it (at the
        start too, before the first request)."""
        with self._lock:
            options, self._pending_options = self._pending_options, None
            swap, self._pending_swap = self._pending_swap, None
        if swap is not None:
            self.engine = swap(self.engine)
        changed = options is not None and options != self.engine.options
        if options is not None and changed:
            self.engine.set_options(options)
        if (changed or starting) and self.engine.options.prewarm == "on":
            self.engine.prewarm()

    def run(self, stop: threading.Event) -> None:
        """Serve until the replay is over and the queue drained, or `stop` is set."""
        replay_thread = threading.Thread(target=self._replay, args=(stop,), name="replayer",
                                         daemon=True)
        self._apply_options(starting=True)     # prewarm before the first arrival, not after
        replay_thread.start()
        while not stop.is_set():
            self._apply_options()
            if self.engine.options.batching == "continuous":
                if not self._serve_continuous(stop):
                    break
                continue
            first = self._take(POLL_S)
            if first is None:
                if self._replay_over():
                    break
                self._idle()
                continue
            batch = [first]
            if self.engine.options.batching == "dynamic":
                batch += self._gather(first)
            self._finished(self.engine.serve([self._engine_request(s) for s in batch]))
        replay_thread.join(timeout=1.0)

    # -- batching ----------------------------------------------------------------------------
    def _gather(self, first: ScheduledRequest) -> list[ScheduledRequest]:
        """Dynamic batching: up to max_batch − 1 more requests, waiting at most the batch window
        counted from the first one's arrival (a request that already waited that long goes
        with whatever is queued now)."""
        settings = self.engine.settings
        deadline = first.scheduled_s + settings.batch_window_ms / 1000.0
        batch: list[ScheduledRequest] = []
        while len(batch) < settings.max_batch - 1:
            remaining = deadline - time.perf_counter()
            if remaining <= 0:
                batch.extend(self._take_now(settings.max_batch - 1 - len(batch)))
                break
            taken = self._take(remaining)
            if taken is None:
                break
            batch.append(taken)
        return batch

    def _serve_continuous(self, stop: threading.Event) -> bool:
        """Iteration-level scheduling until the options change (then the running requests
        finish first) or the replay is over (returns False)."""
        scheduler = ContinuousScheduler(self.engine)
        while not stop.is_set():
            if scheduler.free_slots >= scheduler.join_at or (
                    scheduler.free_slots and scheduler.active == 0):
                # Requests already taken (waiting for KV blocks) are served whatever happens;
                # new ones are taken only while the options stay.
                room = 0 if self.options_pending else scheduler.free_slots - len(
                    scheduler.waiting)
                joiners = self._take_now(max(room, 0))
                if not joiners and scheduler.active == 0 and not scheduler.waiting and room:
                    waited = self._take(POLL_S)
                    joiners = [waited] if waited else []
                if joiners or scheduler.waiting:
                    self._finished(scheduler.join([self._engine_request(s) for s in joiners]))
            self._held = len(scheduler.waiting)
            if scheduler.active == 0:
                if self.options_pending:
                    return True
                if self._replay_over():
                    return False
                self._idle()
                continue
            self._finished(scheduler.step())
            if self.after_step is not None:
                self._finished(self.after_step(scheduler))
        return False

    def _idle(self) -> None:
        """Nothing to serve: one drift reference (a request arriving now waits for it, at
        most one reference decode; the price of drift without a second device)."""
        if self._queue.empty():
            self.engine.compute_references(limit=1)

    # -- queue helpers -----------------------------------------------------------------------
    def _take(self, timeout: float) -> ScheduledRequest | None:
        try:
            return self._queue.get(timeout=timeout)
        except queue.Empty:
            return None

    def _take_now(self, most: int) -> list[ScheduledRequest]:
        taken: list[ScheduledRequest] = []
        while len(taken) < most:
            try:
                taken.append(self._queue.get_nowait())
            except queue.Empty:
                break
        return taken

    def _replay_over(self) -> bool:
        return self.replay_done.is_set() and self._queue.empty()

    def _finished(self, records: list[RequestRecord]) -> None:
        self.completed += sum(r.ok for r in records)
        self.failed += sum(not r.ok for r in records)
        for _ in records:
            self.replayer.request_done()
        if records and self.on_records:
            self.on_records(records)

    def _engine_request(self, scheduled: ScheduledRequest) -> EngineRequest:
        request = scheduled.request
        return EngineRequest(
            id=request.id or f"r{scheduled.seq}", seq=scheduled.seq,
            input_length=request.input_length, output_length=request.output_length,
            arrival_s=self.engine.clock.to_session_s(scheduled.scheduled_s), text=request.text)
