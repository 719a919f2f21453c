"""The dashboard's default rate: half of what the engine measurably serves one at a time."""

from __future__ import annotations

import numpy as np
import pytest

from probe.engine.calibration import (
    OPENING_REQUESTS,
    RECHECK_REQUESTS,
    TARGET_LOAD,
    RateWatch,
    choose_speed,
    opening,
    rate_choice,
    rehearsed_capacity_rps,
)
from probe.engine.model.requests import EngineRequest
from tests.conftest import synthetic_record
from workloads.thinning import CLOCK_FLOOR, MAX_FACTOR, MIN_FACTOR, clock_and_keep, thin
from workloads.trace import load_trace
from workloads.trace_records import Trace, TraceRequest


def test_the_chosen_speed_offers_half_the_measured_capacity(make_engine):
    engine = make_engine("decode=fullgraph")
    trace = load_trace("chat")
    choice = choose_speed(engine, trace)
    first = np.array([r.timestamp_ms for r in trace.requests[:OPENING_REQUESTS]]) / 1000.0
    assert choice.trace_rps == pytest.approx((len(first) - 1) / (first[-1] - first[0]))
    assert MIN_FACTOR <= choice.speed <= MAX_FACTOR
    if MIN_FACTOR < choice.speed < MAX_FACTOR:
        assert choice.load == pytest.approx(TARGET_LOAD)
    assert f"×{choice.speed:.3g}" in choice.text() and "+ / -" in choice.text()
    # the load is a mean over the opening: the text says over what, and how long it lasts
    minutes = (first[-1] - first[0]) / choice.speed / 60
    assert f"over the trace's first {len(first)} requests, about {minutes:.1f} min" in (
        choice.text())
    assert engine.session.freeze().records == ()      # rehearsals are not requests


def test_the_opening_shape_is_the_mean_of_the_first_requests():
    trace = load_trace("chat")
    _, mean_in, mean_out = opening(trace)
    first = trace.requests[:OPENING_REQUESTS]
    assert mean_in == round(np.mean([r.input_length for r in first]))
    assert mean_out == round(np.mean([r.output_length for r in first]))


def test_the_opening_offers_the_work_the_next_minutes_offer():
    """The Azure conversation trace opens quieter than it goes on: its first 50 requests offer
    a sixth of the tokens per second its first 5,000 do. The opening the rate is set on must
    offer within 20% of that, or the baseline is saturated a minute in."""
    from probe.engine.workload_setup import prepare_workload

    trace = prepare_workload("azure-conv", buckets=None, max_input=512, max_output=512).trace

    def tokens_per_s(requests) -> float:
        span = (requests[-1].timestamp_ms - requests[0].timestamp_ms) / 1000.0
        return (len(requests) - 1) / span * np.mean([r.output_length for r in requests])

    rate, _, mean_out = opening(trace)
    assert rate is not None
    assert rate * mean_out == pytest.approx(tokens_per_s(trace.requests[:5000]), rel=0.2)


def steady_trace(n: int = 400, gap_ms: float = 200.0) -> Trace:
    """5 req/s, with a burst and a lull, so that thinning has a shape to keep."""
    times, now = [], 0.0
    for i in range(n):
        now += gap_ms / 4 if 100 <= i < 150 else gap_ms * 2 if 250 <= i < 280 else gap_ms
        times.append(now)
    return Trace("t", tuple(TraceRequest(t, 20, 30, id=f"r{i}") for i, t in enumerate(times)))


def offered_load(trace: Trace, factor: float, capacity: float) -> float:
    """What the replayer offers over the opening at this factor: its kept arrivals over their
    span on the slowed clock, against the capacity."""
    clock, keep = clock_and_keep(factor)
    first = trace.requests[:OPENING_REQUESTS]
    kept_n = len(thin(Trace("o", first), keep).requests)
    span_s = (first[-1].timestamp_ms - first[0].timestamp_ms) / 1000 / clock
    return kept_n / span_s / capacity


@pytest.mark.parametrize("capacity", [40.0, 2.0, 0.3, 0.03])
def test_the_opening_offers_half_the_capacity_where_the_clock_alone_cannot(capacity):
    """A planted slow service (0.3 req/s against a trace opening at 5 req/s: the clock's
    ×0.125 would offer 208%) is met by thinning: the offered load is half the capacity."""
    trace = steady_trace()
    choice = rate_choice(trace, capacity)
    assert choice is not None and choice.load == pytest.approx(TARGET_LOAD)
    assert offered_load(trace, choice.speed, capacity) == pytest.approx(TARGET_LOAD, rel=0.05)
    clock, keep = clock_and_keep(choice.speed)
    assert (keep < 1.0) == (choice.speed < CLOCK_FLOOR)
    assert not choice.at_floor


def test_a_service_slower_than_thinning_reaches_stops_at_the_floor_and_says_so():
    choice = rate_choice(steady_trace(), 0.001)
    assert choice is not None and choice.speed == MIN_FACTOR and choice.at_floor
    assert "of arrivals kept" in choice.text()


class PlantedEngine:
    """Rehearses in the service times it is given, on a clock of its own; the ones marked
    compile add to the compile seconds."""

    def __init__(self, service_s: list[float], compiles: set[int] = frozenset()) -> None:
        self.now, self.service_s, self.compiles, self.calls = 0.0, service_s, compiles, 0
        self.probe = self

    compile_seconds = 0.0

    def rehearse(self, requests) -> None:
        if self.calls in self.compiles:
            self.compile_seconds += 1.0
        self.now += self.service_s[self.calls]
        self.calls += 1


def test_the_rehearsed_capacity_is_one_over_the_mean_warm_service_time():
    """Planted service times: the warm-up (first) and a rehearsal that compiled are left out;
    the rest's mean, not its median, makes the capacity (the tail counts)."""
    service = [9.0, 0.2, 0.2, 5.0, 0.2, 1.4]
    engine = PlantedEngine(service, compiles={3})
    requests = [EngineRequest(f"q{i}", i, 10, 5, 0.0) for i in range(len(service))]
    capacity = rehearsed_capacity_rps(engine, requests, timer=lambda: engine.now)
    assert capacity == pytest.approx(1 / np.mean([0.2, 0.2, 0.2, 1.4]))
    assert rehearsed_capacity_rps(PlantedEngine([1.0, 1.0], compiles={1}),
                                  requests[:2]) is None


def served(seqs: range, service_s: float, config_id: str = "c1"):
    return [synthetic_record(f"r{i}", i, latency_ms=service_s * 1000, config_id=config_id)
            for i in seqs]


def test_the_load_is_held_when_the_capacity_moves_under_the_run():
    """Other processes take the cores: the served requests' service time doubles (planted),
    the rate halves and the offered load is back at half the capacity; they give the cores
    back and it doubles again. A move within the ratio changes nothing."""
    trace = steady_trace()
    choice = rate_choice(trace, 1.0)                # calibrated at 1 s a request
    watch = RateWatch(choice, "c1")
    n = RECHECK_REQUESTS
    records = served(range(n), 1.0)
    assert watch.check(records, "c1") is None               # as calibrated
    records += served(range(n, 2 * n), 1.2)
    assert watch.check(records, "c1") is None               # within the ratio
    records += served(range(2 * n, 3 * n), 2.0)
    slower = watch.check(records, "c1")
    assert slower is not None and slower.after.speed == pytest.approx(choice.speed / 2)
    assert slower.after.load == pytest.approx(TARGET_LOAD)
    assert offered_load(trace, slower.after.speed, 0.5) == pytest.approx(TARGET_LOAD, rel=0.05)
    assert "read 0.50 req/s, -50% against the 1.00 the rate was set on" in slower.text()
    records += served(range(3 * n, 4 * n), 1.0)
    faster = watch.check(records, "c1")
    assert faster is not None and faster.after.speed == pytest.approx(choice.speed)


def test_a_calibration_taken_in_a_quiet_moment_is_corrected_by_the_first_requests():
    """The rehearsal ran fast (planted 0.2 s) and the machine is busy again by the time the
    requests are served (1 s each): the first window sets the rate to half of what they read."""
    trace = steady_trace()
    watch = RateWatch(rate_choice(trace, 5.0), "c1")
    change = watch.check(served(range(RECHECK_REQUESTS), 1.0), "c1")
    assert change is not None and offered_load(trace, change.after.speed, 1.0) == (
        pytest.approx(TARGET_LOAD, rel=0.05))


def test_the_watch_stops_when_the_user_sets_the_rate_or_the_config_changes():
    choice = rate_choice(steady_trace(), 0.3)
    n = RECHECK_REQUESTS
    records = served(range(n), 1.0) + served(range(n, 2 * n), 9.0)
    watch = RateWatch(choice, "c1")
    watch.user_set_rate()
    assert watch.check(records, "c1") is None
    other = RateWatch(choice, "c1")
    assert other.check(records, "c2") is None and other.stopped
