"""Replayer timing with an injected clock: nothing here depends on how fast the machine is."""

from __future__ import annotations

import threading
import time
from typing import Callable

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from probe.common.errors import TraceError
from workloads.replayer import ClosedLoopReplayer, OpenLoopReplayer, ScheduledRequest


class FakeTime:
    """A clock that moves only when the replayer sleeps; `at(t, fn)` runs fn when time reaches t,
    the way another thread would call pause/set_speed (and wake the sleeper)."""

    def __init__(self) -> None:
        self.now = 0.0
        self._events: list[tuple[float, Callable[[], None]]] = []

    def clock(self) -> float:
        return self.now

    def at(self, when: float, action: Callable[[], None]) -> None:
        self._events.append((when, action))
        self._events.sort(key=lambda e: e[0])

    def sleep(self, seconds: float) -> None:
        target = self.now + seconds
        if self._events and self._events[0][0] <= target:
            when, action = self._events.pop(0)
            self.now = max(self.now, when)
            action()
            return
        self.now = target


def _replay(replayer: OpenLoopReplayer, fake: FakeTime, cost_s: float = 0.0) -> list[tuple[ScheduledRequest, float]]:
    seen: list[tuple[ScheduledRequest, float]] = []

    def submit(item: ScheduledRequest) -> None:
        seen.append((item, fake.clock()))
        fake.now += cost_s  # time the engine's submit takes

    replayer.run(submit, threading.Event())
    return seen


def test_speed_10_dispatches_each_request_at_its_scheduled_time(make_trace) -> None:
    fake = FakeTime()
    times_ms = [0, 120, 121, 500, 2000, 2000, 7350]
    replayer = OpenLoopReplayer(make_trace(times_ms), speed=10.0, clock=fake.clock, sleep=fake.sleep)
    seen = _replay(replayer, fake)
    assert [item.seq for item, _ in seen] == list(range(len(times_ms)))
    assert [item.scheduled_s for item, _ in seen] == pytest.approx([t / 1000 / 10 for t in times_ms])
    lateness = [at - item.scheduled_s for item, at in seen]
    assert max(lateness) < 1e-9 and min(lateness) >= 0.0
    assert replayer.dispatched == replayer.total == len(times_ms)


def test_a_slow_engine_makes_requests_late_but_never_moves_their_schedule(make_trace) -> None:
    fake = FakeTime()
    replayer = OpenLoopReplayer(make_trace([0, 100, 200, 300]), clock=fake.clock, sleep=fake.sleep)
    seen = _replay(replayer, fake, cost_s=0.25)
    assert [item.scheduled_s for item, _ in seen] == pytest.approx([0.0, 0.1, 0.2, 0.3])
    assert [at for _, at in seen] == pytest.approx([0.0, 0.25, 0.5, 0.75])  # open loop: queue builds


def test_pause_stops_the_trace_clock_and_shifts_later_requests(make_trace) -> None:
    fake = FakeTime()
    replayer = OpenLoopReplayer(make_trace([0, 1000, 2000, 3000]), clock=fake.clock, sleep=fake.sleep)
    fake.at(1.5, replayer.pause)
    fake.at(11.5, replayer.resume)
    seen = _replay(replayer, fake)
    assert [item.scheduled_s for item, _ in seen] == pytest.approx([0.0, 1.0, 12.0, 13.0])
    assert not replayer.paused


def test_no_dispatch_while_paused(make_trace) -> None:
    fake = FakeTime()
    replayer = OpenLoopReplayer(make_trace([0, 1000]), clock=fake.clock, sleep=fake.sleep)
    replayer.pause()  # before run: nothing goes out until resume
    fake.at(30.0, replayer.resume)
    seen = _replay(replayer, fake)
    assert [at for _, at in seen] == pytest.approx([30.0, 31.0])


def test_speed_change_applies_from_that_moment_without_a_jump(make_trace) -> None:
    fake = FakeTime()
    replayer = OpenLoopReplayer(make_trace([0, 1000, 2000, 3000, 4000]), clock=fake.clock, sleep=fake.sleep)
    fake.at(2.5, lambda: replayer.set_speed(10.0))
    seen = _replay(replayer, fake)
    assert [item.scheduled_s for item, _ in seen] == pytest.approx([0.0, 1.0, 2.0, 2.55, 2.65])
    assert replayer.speed == 10.0


def test_a_request_already_due_keeps_its_time_across_a_speed_change(make_trace) -> None:
    fake = FakeTime()
    replayer = OpenLoopReplayer(make_trace([0, 1000, 8000]), clock=fake.clock, sleep=fake.sleep)

    seen: list[ScheduledRequest] = []

    def submit(item: ScheduledRequest) -> None:
        seen.append(item)
        if item.seq == 0:
            fake.now = 5.0  # the engine blocks; meanwhile the user speeds up
            replayer.set_speed(2.0)

    replayer.run(submit, threading.Event())
    assert [item.scheduled_s for item in seen] == pytest.approx([0.0, 1.0, 6.5])


def test_loop_keeps_counting_and_spaces_laps_by_a_mean_gap(make_trace) -> None:
    fake = FakeTime()
    replayer = OpenLoopReplayer(make_trace([0, 1000, 2000]), loop=True, max_requests=7,
                                clock=fake.clock, sleep=fake.sleep)
    seen = _replay(replayer, fake)
    assert [item.seq for item, _ in seen] == list(range(7))
    assert [item.scheduled_s for item, _ in seen] == pytest.approx([0, 1, 2, 3, 4, 5, 6])
    assert [item.request.timestamp_ms for item, _ in seen][3:6] == [0, 1000, 2000]


def test_loop_forever_until_stop(make_trace) -> None:
    fake = FakeTime()
    replayer = OpenLoopReplayer(make_trace([0, 500]), loop=True, clock=fake.clock, sleep=fake.sleep)
    assert replayer.total is None
    stop = threading.Event()
    seen: list[ScheduledRequest] = []

    def submit(item: ScheduledRequest) -> None:
        seen.append(item)
        if len(seen) == 25:
            stop.set()

    replayer.run(submit, stop)
    assert len(seen) == 25 and replayer.dispatched == 25


def test_requests_limit_and_rate_override(make_trace) -> None:
    fake = FakeTime()
    trace = make_trace([0, 1000, 3000, 4000, 8000])  # mean rate 0.5 rps; the first 4: 0.75
    replayer = OpenLoopReplayer(trace, rate=2.0, max_requests=4, clock=fake.clock, sleep=fake.sleep)
    seen = _replay(replayer, fake)
    assert replayer.total == 4
    # the 4 replayed arrive at 2 rps: (4 - 1) / 1.5 s, their shape kept
    assert [item.scheduled_s for item, _ in seen] == pytest.approx([0.0, 0.375, 1.125, 1.5])
    # looping replays the whole trace: its own mean rate is the one set
    looped = OpenLoopReplayer(trace, rate=2.0, loop=True, max_requests=4,
                              clock=fake.clock, sleep=fake.sleep)
    assert [looped._schedule.at(i)[1] for i in range(5)] == pytest.approx([0, 0.25, 0.75, 1, 2])


@given(gaps=st.lists(st.integers(min_value=0, max_value=60_000), min_size=1, max_size=60),
       cut=st.integers(min_value=2, max_value=61),
       rate=st.floats(min_value=0.01, max_value=100.0))
@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])   # make_trace: no state
def test_the_requests_replayed_arrive_at_the_rate_set(make_trace, gaps, cut, rate) -> None:
    """Whatever the trace and however short --requests cuts it, the replayed requests' mean
    rate, (k - 1) over their span, is --rate (a trace whose replayed part has no span aside)."""
    stamps = [0]
    for gap in gaps:
        stamps.append(stamps[-1] + gap)
    replayer = OpenLoopReplayer(make_trace(stamps), rate=rate, max_requests=cut)
    k = replayer.total
    assert k is not None
    times = [replayer._schedule.at(i)[1] for i in range(k)]
    assert times == sorted(times)
    if k > 1 and stamps[k - 1] > 0:
        assert (k - 1) / times[-1] == pytest.approx(rate, rel=1e-9)


def test_open_loop_with_the_real_clock(make_trace) -> None:
    """Real threads and time, no timing assertions: order, counts, never early."""
    replayer = OpenLoopReplayer(make_trace([0, 10, 10, 20, 40, 41, 80]), speed=4.0)
    seen: list[tuple[ScheduledRequest, float]] = []
    worker = threading.Thread(target=replayer.run,
                              args=(lambda item: seen.append((item, time.perf_counter())), threading.Event()))
    worker.start()
    worker.join(timeout=60)
    assert not worker.is_alive()
    assert [item.seq for item, _ in seen] == list(range(7))
    assert all(at >= item.scheduled_s for item, at in seen)


def test_pause_from_another_thread_wakes_the_replayer(make_trace) -> None:
    replayer = OpenLoopReplayer(make_trace([0, 3_600_000]))  # second request an hour away
    stop = threading.Event()
    seen: list[ScheduledRequest] = []
    worker = threading.Thread(target=replayer.run, args=(seen.append, stop))
    worker.start()
    replayer.pause()
    replayer.set_speed(1e9)  # paused: still nothing may go out
    stop.set()
    worker.join(timeout=60)
    assert not worker.is_alive() and len(seen) <= 1


def test_closed_loop_keeps_concurrency_outstanding(make_trace) -> None:
    replayer = ClosedLoopReplayer(make_trace([0, 1, 2, 3, 4, 5, 6]), concurrency=3, clock=lambda: 42.0)
    seen: list[ScheduledRequest] = []
    outstanding_at_submit: list[int] = []

    def submit(item: ScheduledRequest) -> None:
        outstanding_at_submit.append(replayer.outstanding)
        seen.append(item)

    worker = threading.Thread(target=replayer.run, args=(submit, threading.Event()))
    worker.start()
    for expected in range(3, 8):
        _wait_for(lambda: replayer.dispatched == expected)   # noqa: B023 (waited for here)
        assert replayer.outstanding == 3
        if expected < 7:
            time.sleep(0.01)  # a window for a wrong fourth dispatch to show up
            assert replayer.dispatched == expected
            replayer.request_done()
    worker.join(timeout=60)
    assert not worker.is_alive()
    assert [item.seq for item in seen] == list(range(7))
    assert max(outstanding_at_submit) <= 3
    assert {item.scheduled_s for item in seen} == {42.0}


def test_closed_loop_request_done_too_often() -> None:
    from workloads.trace_records import Trace, TraceRequest

    replayer = ClosedLoopReplayer(Trace("t", (TraceRequest(0.0, 1, 1),)), concurrency=1)
    with pytest.raises(RuntimeError):
        replayer.request_done()


def test_bad_replayer_options(make_trace) -> None:
    trace = make_trace([0, 1])
    with pytest.raises(TraceError, match="--rate"):
        OpenLoopReplayer(trace, rate=0)
    with pytest.raises(TraceError, match="--requests"):
        OpenLoopReplayer(trace, max_requests=0)
    with pytest.raises(TraceError, match="--concurrency"):
        ClosedLoopReplayer(trace, concurrency=0)
    with pytest.raises(ValueError):
        OpenLoopReplayer(trace).set_speed(-1)


def _wait_for(condition: Callable[[], bool], timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "condition not reached"
        time.sleep(0.001)
