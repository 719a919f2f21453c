"""A restarted engine's replay goes on after the last request dispatched: numbering, totals
and the trace's order continue; nothing is replayed twice."""

from __future__ import annotations

import threading

import pytest

from probe.engine.process.resumed_replay import ContinuedReplayer, rest_of
from workloads.trace_records import Trace, TraceRequest

FAST = 1e6      # the whole trace in milliseconds of real time


def trace(n: int = 5) -> Trace:
    return Trace("t", tuple(TraceRequest(timestamp_ms=100.0 * i * i, input_length=i + 1,
                                         output_length=2, id=f"q{i}") for i in range(n)))


def run(replayer: ContinuedReplayer) -> list[tuple[int, str]]:
    seen: list[tuple[int, str]] = []
    replayer.run(lambda s: seen.append((s.seq, s.request.id)), threading.Event())
    return seen


@pytest.mark.parametrize("first_seq", [0, 2, 4])
def test_a_replay_goes_on_from_first_seq(first_seq):
    replayer = ContinuedReplayer(trace(), first_seq=first_seq, speed=FAST)
    assert run(replayer) == [(s, f"q{s}") for s in range(first_seq, 5)]
    assert replayer.dispatched == 5 and replayer.total == 5


def test_looping_it_goes_on_in_the_trace_order_across_laps():
    replayer = ContinuedReplayer(trace(), first_seq=7, speed=FAST, loop=True, max_requests=14)
    assert run(replayer) == [(s, f"q{s % 5}") for s in range(7, 14)]
    assert replayer.total == 14


def test_a_replay_its_predecessor_finished_dispatches_nothing():
    replayer = ContinuedReplayer(trace(), first_seq=5, speed=FAST)
    assert run(replayer) == [] and replayer.dispatched == 5 and replayer.total == 5
    replayer.pause()
    replayer.set_speed(2.0)
    assert replayer.paused and replayer.speed == 2.0


def test_each_dispatch_is_reported_before_the_engine_sees_it():
    order: list[str] = []
    replayer = ContinuedReplayer(trace(), first_seq=3, speed=FAST,
                                 on_dispatch=lambda s: order.append(f"journal {s.seq}"))
    replayer.run(lambda s: order.append(f"queue {s.seq}"), threading.Event())
    assert order == ["journal 3", "queue 3", "journal 4", "queue 4"]


def test_the_rest_of_a_lap_keeps_its_gaps_and_the_next_lap_follows_a_period_later():
    original = trace()
    rest = rest_of(original, 7, loop=True)            # lap 1, from its third request
    stamps = [r.timestamp_ms for r in rest.requests]
    assert [r.id for r in rest.requests] == ["q2", "q3", "q4", "q0", "q1"]
    assert stamps[1] - stamps[0] == 500.0 and stamps[2] - stamps[1] == 700.0   # as in the trace
    assert stamps[3] - stamps[2] == 1600.0 / 4           # a lap restarts one mean gap later
    assert rest_of(original, 2, loop=False).requests == original.requests[2:]


def test_below_the_clock_floor_the_speed_is_a_share_of_arrivals_kept_across_a_restart():
    """The dashboard's rate factor: ×0.0375 is the clock at ×0.125 keeping 30% of the arrivals;
    a restarted replay keeps the same positions of the trace its predecessor would have."""
    from workloads.thinning import CLOCK_FLOOR, kept

    at_once = Trace("t", tuple(TraceRequest(0.0, 1, 2, id=f"q{i}") for i in range(60)))
    factor = CLOCK_FLOOR * 0.3
    whole = ContinuedReplayer(at_once, speed=factor)
    assert whole.speed == pytest.approx(factor)
    expected = [(p, f"q{p}") for p in range(60) if kept(p, 0.3)]
    assert whole.total == len(expected) and run(whole) == expected
    restarted = ContinuedReplayer(at_once, first_seq=17, speed=factor)
    assert run(restarted) == [(p, q) for p, q in expected if p >= 17]
    restarted.set_speed(1.0)
    assert restarted.speed == 1.0
