"""Thinning a trace below the clock's floor: a deterministic, evenly spread subset of its
arrivals, whose rate over any stretch of time is the trace's times the share kept."""

from __future__ import annotations

import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from workloads.replayer import OpenLoopReplayer, ScheduledRequest
from workloads.thinning import (
    CLOCK_FLOOR,
    MAX_FACTOR,
    MIN_FACTOR,
    MIN_KEEP,
    bounded_factor,
    clock_and_keep,
    kept,
    kept_between,
    thin,
)
from workloads.trace_records import Trace, TraceRequest

# Any run of consecutive positions keeps keep × its length within this many arrivals, for runs
# of up to a few thousand (the golden rotation's discrepancy grows as log N; measured ≤ 3.4).
WITHIN = 4

gaps_ms = st.lists(st.floats(min_value=0.0, max_value=60_000.0), min_size=1, max_size=2000)
keeps = st.floats(min_value=MIN_KEEP, max_value=1.0)


def trace_of(gaps: list[float]) -> Trace:
    times, now = [], 0.0
    for gap in gaps:
        now += gap
        times.append(now)
    return Trace("t", tuple(TraceRequest(t, 1 + i % 7, 1 + i % 5, id=f"r{i}")
                            for i, t in enumerate(times)))


@settings(max_examples=200, deadline=None)
@given(gaps_ms, keeps)
def test_the_kept_arrivals_are_a_deterministic_subset_of_the_right_count(gaps, keep):
    trace = trace_of(gaps)
    thinned = thin(trace, keep)
    assert thinned == thin(trace, keep)                     # deterministic
    ids = [r.id for r in trace.requests]
    positions = [ids.index(r.id) for r in thinned.requests]
    assert positions == sorted(positions)                   # a subset, in trace order
    assert abs(len(thinned.requests) - keep * len(trace.requests)) <= WITHIN
    assert len(thinned.requests) == kept_between(0, len(trace.requests), keep)


@settings(max_examples=200, deadline=None)
@given(gaps_ms, keeps, st.data())
def test_every_stretch_of_time_keeps_its_share_so_the_shape_is_the_traces(gaps, keep, data):
    """The arrivals in any window of trace time, thinned, are keep × the trace's within a
    few: the rate over time (bursts, lulls, a busier second hour) is the trace's, scaled."""
    trace = trace_of(gaps)
    times = [r.timestamp_ms for r in trace.requests]
    start = data.draw(st.floats(min_value=0.0, max_value=times[-1]))
    end = data.draw(st.floats(min_value=start, max_value=times[-1]))
    kept_times = [r.timestamp_ms for r in thin(trace, keep).requests]
    inside = sum(start <= t <= end for t in times)
    kept_inside = sum(start <= t <= end for t in kept_times)
    assert abs(kept_inside - keep * inside) <= WITHIN
    # and so the kept arrivals' distribution over time is the trace's, within 2·WITHIN of
    # them (Kolmogorov–Smirnov distance of the two empirical distributions)
    if kept_times:
        ks = max(abs(sum(t <= x for t in kept_times) / len(kept_times)
                     - sum(t <= x for t in times) / len(times)) for x in times)
        assert ks <= 2 * WITHIN / len(kept_times)


@settings(max_examples=100, deadline=None)
@given(st.integers(min_value=0, max_value=5000), keeps, keeps)
def test_a_higher_share_keeps_every_arrival_a_lower_one_keeps(position, a, b):
    low, high = sorted((a, b))
    assert not kept(position, low) or kept(position, high)


@given(st.floats(min_value=MIN_FACTOR / 4, max_value=MAX_FACTOR * 4))
def test_a_factor_is_a_clock_at_or_above_its_floor_times_a_share_kept(factor):
    bounded = bounded_factor(factor)
    clock, keep = clock_and_keep(bounded)
    assert clock >= CLOCK_FLOOR and MIN_KEEP <= keep <= 1.0
    assert clock * keep == pytest.approx(bounded)
    assert keep == 1.0 or clock == CLOCK_FLOOR     # thinned only where the clock cannot slow


def test_the_replayer_dispatches_the_kept_positions_as_their_seq_at_their_own_times():
    trace = trace_of([100.0] * 40)
    replayer = OpenLoopReplayer(trace, speed=1e6, keep=0.3)
    assert replayer.total == len(thin(trace, 0.3).requests)
    seen: list[ScheduledRequest] = []
    replayer.run(seen.append, threading.Event())
    assert [s.request for s in seen] == list(thin(trace, 0.3).requests)
    assert [s.seq for s in seen] == [p for p in range(40) if kept(p, 0.3)]
    assert replayer.total == len(seen) and replayer.dispatched == 40
