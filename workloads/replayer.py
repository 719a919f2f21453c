"""Replay a trace into an engine: open loop (arrivals at trace times) or closed loop (fixed concurrency).

Threads only. `run()` blocks in the caller's thread; `pause`, `resume` and `set_speed` may be
called from any other thread. Clock and sleep are injectable so tests need no real time.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Callable, Protocol

from probe.common.errors import file_error
from workloads.thinning import kept, kept_between
from workloads.trace_records import Trace, TraceRequest
from workloads.vclock import VirtualClock

Clock = Callable[[], float]
Sleep = Callable[[float], None]
Submit = Callable[["ScheduledRequest"], None]

# Longest single wait, so a set `stop` event is noticed promptly even with an injected sleep.
MAX_WAIT_S = 0.05


@dataclass(frozen=True)
class ScheduledRequest:
    seq: int  # 0, 1, 2, ... in dispatch order (keeps growing across loops)
    request: TraceRequest
    scheduled_s: float  # the clock() value at which it was due to arrive: queue wait starts here


class Replayer(Protocol):
    """What a serving loop drives: `run` dispatches until done or `stop`; `request_done` is told
    each time a dispatched request finishes (a closed loop frees its slot; an open loop's
    arrivals wait for nothing)."""

    @property
    def paused(self) -> bool: ...

    @property
    def total(self) -> int | None: ...

    def run(self, submit: Submit, stop: threading.Event) -> None: ...

    def request_done(self) -> None: ...


class _Schedule:
    """Trace offsets in virtual seconds, with the rate override and looping applied."""

    def __init__(self, trace: Trace, rate: float | None, loop: bool, max_requests: int | None) -> None:
        if not trace.requests:
            raise file_error(f"{trace.source or trace.name}: empty trace: nothing to replay")
        if rate is not None and rate <= 0:
            raise file_error(f"--rate: must be > 0 requests per second, got {rate:g}")
        if max_requests is not None and max_requests < 1:
            raise file_error(f"--requests: must be >= 1, got {max_requests}")
        self.requests = trace.requests
        first_ms = trace.requests[0].timestamp_ms
        offsets = [(r.timestamp_ms - first_ms) / 1000.0 for r in trace.requests]
        n = len(offsets)
        span = offsets[-1]
        if max_requests is not None:
            self.total: int | None = max_requests if loop else min(max_requests, n)
        else:
            self.total = None if loop else n
        if rate is not None:
            # Stretch time so the requests replayed arrive at `rate` on average, (k - 1) / their
            # span; shape is kept. Of a trace cut short by --requests that is the first k, not
            # the whole trace: the builtin chat trace's first 40 arrive 1.9x as fast as its 2,000.
            k = n if loop or self.total is None or self.total == 1 else self.total
            # (one request has no rate: then the whole trace is stretched)
            if offsets[k - 1] > 0:
                factor = (k - 1) / offsets[k - 1] / rate
                offsets = [o * factor for o in offsets]
            else:
                # the requests replayed all arrive at one instant: spread evenly at `rate`
                offsets = [i / rate for i in range(n)]
            span = offsets[-1]
        mean_gap = span / (n - 1) if n > 1 and span > 0 else (1.0 / rate if rate else 1.0)
        self.offsets = offsets
        self.period = span + mean_gap  # a loop restarts one mean gap after the last request
        self.loop = loop

    def at(self, seq: int) -> tuple[TraceRequest, float]:
        lap, index = divmod(seq, len(self.requests))
        return self.requests[index], self.offsets[index] + lap * self.period

    def done(self, seq: int) -> bool:
        return self.total is not None and seq >= self.total


class ReplayerBase:
    """What every replayer shares: its clock, how many requests it has dispatched and of how
    many (None: no end), and a pause switch held under `_lock`; a subclass says what else a
    pause or a resume changes (`_switched`). A finished request frees nothing by default: open
    loop arrivals keep their times whatever the engine finishes."""

    def __init__(self, total: int | None, clock: Clock) -> None:
        self._total = total
        self._clock = clock
        self._lock = threading.Condition()
        self._paused = False
        self._dispatched = 0

    @property
    def paused(self) -> bool:
        return self._paused

    @property
    def dispatched(self) -> int:
        return self._dispatched

    @property
    def total(self) -> int | None:
        """Requests this run will dispatch; None when it has no end (looping forever)."""
        return self._total

    def pause(self) -> None:
        self._switch(True)

    def resume(self) -> None:
        self._switch(False)

    def _switch(self, paused: bool) -> None:
        with self._lock:
            self._paused = paused
            self._switched(paused)
            self._lock.notify_all()

    def _switched(self, paused: bool) -> None:
        """What a pause or a resume changes beyond the switch (called holding the lock)."""

    def request_done(self) -> None:
        pass


class OpenLoopReplayer(ReplayerBase):
    """Requests arrive at their trace times whatever the engine does, so queueing is visible.

    Pausing stops the trace clock: requests due during a pause arrive after resume, shifted by
    the pause. A speed change applies from that moment on; the trace clock does not jump.
    `keep` < 1 thins the arrivals (workloads/thinning.py): a position not kept is passed over,
    so `seq` is the request's position in the replay and skips those.
    """

    def __init__(
        self,
        trace: Trace,
        *,
        speed: float = 1.0,
        loop: bool = False,
        max_requests: int | None = None,
        rate: float | None = None,
        clock: Clock = time.perf_counter,
        sleep: Sleep | None = None,
        keep: float = 1.0,
        first_position: int = 0,
    ) -> None:
        if not speed > 0:
            raise file_error(f"--speed: must be > 0, got {speed:g}")
        self._schedule = _Schedule(trace, rate, loop, max_requests)
        super().__init__(self._schedule.total, clock)
        self._wake = threading.Event()
        self._sleep = sleep or self._interruptible_sleep
        self._speed = speed
        self._vclock: VirtualClock | None = None
        # _dispatched (the base's): the next position of the replay, thinned or not
        self._keep = keep
        self._sent = 0              # requests submitted
        self._first_position = first_position   # thinning's position of this trace's first

    @property
    def speed(self) -> float:
        return self._speed

    @property
    def positions(self) -> int | None:
        """Positions of the replay this run goes through, thinned or not; None: forever."""
        return self._schedule.total

    @property
    def total(self) -> int | None:
        """Requests this run will dispatch; None when looping forever."""
        total = self._schedule.total
        with self._lock:
            keep, position, sent = self._keep, self._dispatched, self._sent
        if total is None or keep >= 1.0:
            return total
        offset = self._first_position
        return sent + kept_between(offset + position, offset + total, keep)

    def set_keep(self, keep: float) -> None:
        """The share of arrivals kept from now on (0 < keep ≤ 1)."""
        if not 0 < keep <= 1:
            raise ValueError(f"keep must be in (0, 1], got {keep!r}")
        with self._lock:
            self._keep = keep
        self._wake.set()

    def set_speed(self, speed: float) -> None:
        if not speed > 0:
            raise ValueError(f"speed must be > 0, got {speed!r}")
        with self._lock:
            self._speed = speed
            if self._vclock is not None:
                self._vclock.set_speed(self._clock(), speed)
        self._wake.set()

    def _switched(self, paused: bool) -> None:
        if self._vclock is not None:
            (self._vclock.pause if paused else self._vclock.resume)(self._clock())
        self._wake.set()

    def run(self, submit: Submit, stop: threading.Event) -> None:
        """Dispatch until the trace (or --requests) is done or `stop` is set."""
        with self._lock:
            self._vclock = VirtualClock(self._clock(), self._speed, paused=self._paused)
        seq = self._dispatched
        while not stop.is_set() and not self._schedule.done(seq):
            if not kept(self._first_position + seq, self._keep):
                seq += 1
                with self._lock:
                    self._dispatched = seq
                continue
            request, virtual_due = self._schedule.at(seq)
            with self._lock:
                due = self._vclock.real_at(virtual_due)
            now = self._clock()
            if due is not None and now >= due:
                submit(ScheduledRequest(seq=seq, request=request, scheduled_s=due))
                seq += 1
                with self._lock:
                    self._dispatched = seq
                    self._sent += 1
                    self._vclock.forget_before(virtual_due)
                continue
            self._sleep(MAX_WAIT_S if due is None else min(due - now, MAX_WAIT_S))

    def _interruptible_sleep(self, seconds: float) -> None:
        # pause/resume/set_speed set the event so a long wait is recomputed at once.
        self._wake.wait(seconds)
        self._wake.clear()


class ClosedLoopReplayer(ReplayerBase):
    """Fixed concurrency for batch work: keeps `concurrency` requests outstanding.

    A request is due the moment a slot is free, so `scheduled_s` is that moment. The engine
    calls request_done() when one finishes. run() returns after the last dispatch.
    """

    def __init__(
        self,
        trace: Trace,
        *,
        concurrency: int,
        max_requests: int | None = None,
        loop: bool = False,
        clock: Clock = time.perf_counter,
    ) -> None:
        if concurrency < 1:
            raise file_error(f"--concurrency: must be >= 1, got {concurrency}")
        self._schedule = _Schedule(trace, None, loop, max_requests)
        super().__init__(self._schedule.total, clock)
        self.concurrency = concurrency
        self._outstanding = 0

    @property
    def outstanding(self) -> int:
        return self._outstanding

    def request_done(self) -> None:
        with self._lock:
            if self._outstanding == 0:
                raise RuntimeError("request_done() called more often than requests were submitted")
            self._outstanding -= 1
            self._lock.notify_all()

    def run(self, submit: Submit, stop: threading.Event) -> None:
        seq = self._dispatched
        while not stop.is_set() and not self._schedule.done(seq):
            with self._lock:
                if self._paused or self._outstanding >= self.concurrency:
                    self._lock.wait(MAX_WAIT_S)
                    continue
                self._outstanding += 1
            request, _ = self._schedule.at(seq)
            submit(ScheduledRequest(seq=seq, request=request, scheduled_s=self._clock()))
            seq += 1
            self._dispatched = seq
