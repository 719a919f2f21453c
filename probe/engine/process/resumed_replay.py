"""The open-loop replay from a given request on: a restarted engine goes on after the last
request its predecessor dispatched, instead of replaying the trace from its first request.

Wraps workloads' OpenLoopReplayer (which always starts at request 0, at trace time 0) over the
rest of the trace; numbering (`seq`), `dispatched` and `total` go on from the whole replay's.

Its `speed` is the dashboard's rate factor (what `+`/`-`, the calibration and the status bar
speak): below the trace clock's floor it is a slower clock and a share of the arrivals kept
(workloads/thinning.py). `seq` is the position in the replay, so a restart goes on from the
trace's place, thinned or not."""

from __future__ import annotations

import threading
from dataclasses import replace
from typing import Callable

from workloads.replayer import OpenLoopReplayer, ScheduledRequest, Submit
from workloads.thinning import MIN_FACTOR, clock_and_keep
from workloads.trace_records import Trace


class ContinuedReplayer:
    """`first_seq` = 0 is a plain OpenLoopReplayer. `on_dispatch` sees each request before the
    engine's queue does (the journal notes it, so a request the engine dies holding is known)."""

    def __init__(self, trace: Trace, *, first_seq: int = 0, speed: float = 1.0,
                 loop: bool = False, max_requests: int | None = None,
                 on_dispatch: Callable[[ScheduledRequest], None] | None = None) -> None:
        self.first_seq = first_seq
        self._on_dispatch = on_dispatch
        clock, keep = clock_and_keep(speed)
        factor = max(speed, MIN_FACTOR)     # clock × keep, as asked (not rounded by the product)
        whole = OpenLoopReplayer(trace, speed=clock, loop=loop, max_requests=max_requests,
                                 keep=keep)
        self._total = whole.positions
        left = None if whole.positions is None else whole.positions - first_seq
        if first_seq == 0:
            self._rest: OpenLoopReplayer | None = whole
        elif left is not None and left <= 0:
            self._rest = None           # its predecessor dispatched them all
        else:
            self._rest = OpenLoopReplayer(rest_of(trace, first_seq, loop), speed=clock,
                                          loop=loop, max_requests=left, keep=keep,
                                          first_position=first_seq)
        self._speed, self._paused = factor, False

    @property
    def speed(self) -> float:
        """The rate factor: the clock's speed times the share of arrivals kept."""
        return self._speed

    @property
    def paused(self) -> bool:
        return self._rest.paused if self._rest else self._paused

    @property
    def dispatched(self) -> int:
        return self.first_seq + (self._rest.dispatched if self._rest else 0)

    @property
    def total(self) -> int | None:
        if self._rest is None or self._rest.total is None:
            return self._total
        return self.first_seq + self._rest.total

    def set_speed(self, speed: float) -> None:
        clock, keep = clock_and_keep(speed)
        self._speed = max(speed, MIN_FACTOR)
        if self._rest:
            self._rest.set_keep(keep)
            self._rest.set_speed(clock)

    def pause(self) -> None:
        self._paused = True
        if self._rest:
            self._rest.pause()

    def resume(self) -> None:
        self._paused = False
        if self._rest:
            self._rest.resume()

    def request_done(self) -> None:
        pass    # open loop: arrivals wait for nothing

    def run(self, submit: Submit, stop: threading.Event) -> None:
        if self._rest is None:
            return

        def renumbered(scheduled: ScheduledRequest) -> None:
            scheduled = replace(scheduled, seq=scheduled.seq + self.first_seq)
            if self._on_dispatch is not None:
                self._on_dispatch(scheduled)
            submit(scheduled)

        self._rest.run(renumbered, stop)


def rest_of(trace: Trace, first_seq: int, loop: bool) -> Trace:
    """The requests from `first_seq` on. Looping, the lap's first requests follow its last one
    a period later, as in the replayer's own laps (a period is the span plus one mean gap); only
    the gap where the rotated trace itself wraps differs from the original's, by design of
    this approximation."""
    requests, n = trace.requests, len(trace.requests)
    start = first_seq % n
    if not loop:
        return replace(trace, requests=requests[first_seq:])
    if start == 0:
        return trace
    span_ms = requests[-1].timestamp_ms - requests[0].timestamp_ms
    period_ms = span_ms + (span_ms / (n - 1) if n > 1 and span_ms > 0 else 1000.0)
    wrapped = tuple(replace(r, timestamp_ms=r.timestamp_ms + period_ms) for r in requests[:start])
    return replace(trace, requests=requests[start:] + wrapped)
