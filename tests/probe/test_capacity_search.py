"""Capacity at the SLO, found by bracketing and bisection, on a fake engine whose capacity is
known in closed form: one server, a fixed service time, evenly spaced arrivals. Its records go
through the real attainment function, so the search sees what a replay would."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from probe.analysis.slo import slo_attainment
from probe.contract.objective import Slo
from probe.contract.records import RequestRecord
from probe.runs.capacity import Capacity, RateRun, capacity_search, find_capacity, interleave
from probe.runs.rate_runs import ran_alone


def fake_records(rate: float, service_s: float, count: int) -> list[RequestRecord]:
    """FIFO, one at a time: request i arrives at i/rate and waits for the one before it."""
    records, free_at = [], 0.0
    for i in range(count):
        arrival = i / rate
        start = max(arrival, free_at)
        end = free_at = start + service_s
        records.append(RequestRecord(
            id=f"r{i}", seq=i, config_id="c1", input_tokens=8, padded_tokens=8,
            output_tokens=4, arrival_s=arrival, start_s=start, first_token_s=start,
            end_s=end, queue_ms=(start - arrival) * 1e3, compile_stall_ms=0.0,
            encoder_ms=0.0, decoder_ms=service_s * 1e3, ttft_ms=(start - arrival) * 1e3,
            tpot_ms=None, latency_ms=(end - arrival) * 1e3, kv_cache_bytes=0,
            kv_cache_used_bytes=0, kv_self_attention_bytes=0, kv_cross_attention_bytes=0))
    return records


def known_capacity(service_s: float, bound_s: float, count: int, target: float) -> float:
    """Request i's latency is s + i·(s − 1/r) above 1/s; the first ⌈target·N⌉ must be
    within the bound: the highest rate where request ⌈target·N⌉−1 still is."""
    last = math.ceil(target * count) - 1
    if last == 0:
        return math.inf
    return 1.0 / (service_s - (bound_s - service_s) / last)


def fake_engine(service_s: float, bound_s: float, count: int):
    slo = Slo(latency_ms=bound_s * 1e3)
    calls = []

    def measure(rate: float) -> RateRun:
        calls.append(rate)
        records = fake_records(rate, service_s, count)
        return RateRun(rate, slo_attainment(records, slo), alone=ran_alone(records))
    return measure, calls


@settings(max_examples=60, deadline=None)
@given(service_s=st.floats(0.01, 2.0), slack=st.floats(1.05, 4.0),
       start=st.floats(0.01, 200.0), target=st.sampled_from([0.5, 0.9, 0.95]))
def test_the_search_brackets_the_known_capacity(service_s, slack, start, target):
    count = 60
    bound = service_s * slack
    truth = known_capacity(service_s, bound, count, target)
    measure, calls = fake_engine(service_s, bound, count)
    found = find_capacity(measure, start_rps=start, target=target, max_runs=12)
    assert len(calls) == len(found.runs) <= 12
    low, high = found.bracket
    assert low is not None and found.capacity_rps == low
    assert low <= truth * (1 + 1e-9)                # measured to meet: not above capacity
    if high is not None:
        assert high > truth * (1 - 1e-9)            # measured to miss: above it
        assert next(r for r in found.runs if r.rate_rps == high).slo_attainment < target
    # every run agrees with the bracket: at or below low meets, at or above high misses
    for run in found.runs:
        if run.rate_rps <= low:
            assert run.meets(target)
        if high is not None and run.rate_rps >= high:
            assert not run.meets(target)


def test_a_few_runs_narrow_the_bracket_from_a_far_start():
    measure, calls = fake_engine(0.1, 0.5, 60)                  # capacity ≈ 12.1 req/s
    truth = known_capacity(0.1, 0.5, 60, 0.9)
    found = find_capacity(measure, start_rps=1.0, target=0.9, max_runs=10)
    low, high = found.bracket
    assert low <= truth < high and high / low <= 1.15
    assert "req/s at ≥90% attainment" in found.text()


def test_when_no_rate_meets_the_target_it_says_so():
    never = lambda rate: RateRun(rate, 0.2)   # noqa: E731
    found = find_capacity(never, start_rps=4.0, max_runs=4)
    assert found.capacity_rps is None and found.bracket == (None, 0.5)
    assert "no rate met" in found.text() and len(found.runs) == 4


@settings(max_examples=60, deadline=None)
@given(service_s=st.floats(0.01, 2.0), load=st.floats(0.05, 4.0), count=st.integers(2, 30))
def test_a_run_is_alone_exactly_when_no_request_arrives_before_the_last_has_finished(
        service_s, load, count):
    rate = load / service_s                     # load < 1: each arrives after the last ended
    records = fake_records(rate, service_s, count)
    assert ran_alone(records) == (1 / rate >= service_s)
    assert ran_alone(records[::-1]) == ran_alone(records)       # by arrival, not by list order
    assert not ran_alone([])


@settings(max_examples=40, deadline=None)
@given(service_s=st.floats(0.05, 2.0), short=st.floats(0.2, 0.95), start=st.floats(0.05, 50.0))
def test_a_config_that_misses_unloaded_stops_halving_at_its_first_lone_run(
        service_s, short, start):
    """A latency bound below the service time cannot be met at any rate: once a run has served
    every request alone, lower rates would only take longer to replay."""
    measure, calls = fake_engine(service_s, short * service_s, 10)
    found = find_capacity(measure, start_rps=start, max_runs=8)
    assert found.capacity_rps is None and len(calls) == len(found.runs)
    assert not any(run.alone for run in found.runs[:-1])       # halving went on while loaded
    last = found.runs[-1]
    assert last.alone or len(calls) == 8                        # and stopped at the first lone run
    assert last.alone == (last.rate_rps * service_s <= 1 + 1e-9)
    assert ("every request served alone" in found.text()) == last.alone


def test_a_run_without_records_counts_as_missing_the_target():
    found = find_capacity(lambda rate: RateRun(rate, None if rate > 3 else 1.0),
                          start_rps=1.0, max_runs=8)
    assert found.bracket[0] <= 3 < found.bracket[1]


@pytest.mark.parametrize("start, runs", [(0.0, 6), (math.inf, 6), (1.0, 1)])
def test_bad_search_settings_are_refused(start, runs):
    with pytest.raises(ValueError):
        find_capacity(lambda r: RateRun(r, 1.0), start_rps=start, max_runs=runs)


def test_the_result_reads_back_as_json():
    found: Capacity = find_capacity(lambda r: RateRun(r, 1.0 if r < 5 else 0.0, r),
                                    start_rps=1.0, max_runs=6)
    raw = found.as_dict()
    assert raw["capacity_rps"] == found.capacity_rps and raw["bracket_rps"] == list(found.bracket)
    assert [r["rate_rps"] for r in raw["runs"]] == [r.rate_rps for r in found.runs]


def test_bench_capacity_is_opt_in_and_needs_an_slo(capsys, tmp_path, monkeypatch):
    from infertop.cli import main
    from probe.bench.experiments import select_experiments
    assert "capacity" not in select_experiments(None)
    assert select_experiments("E1,capacity") == ("E1", "capacity")
    monkeypatch.chdir(tmp_path)
    assert main(["bench", "--out", "o", "--experiments", "capacity"]) == 2
    assert "needs --slo" in capsys.readouterr().err and not (tmp_path / "o").exists()


@settings(max_examples=40, deadline=None)
@given(services=st.lists(st.floats(0.01, 1.0), min_size=2, max_size=3),
       start=st.floats(0.05, 50.0), runs=st.integers(2, 8))
def test_searches_taking_turns_find_what_each_finds_alone(services, start, runs):
    """tune alternates a candidate's search with its control's, run by run: each ends where it
    would alone, and while two are still searching no config runs twice in a row."""
    order: list[int] = []

    def engine(i: int):
        measure, _ = fake_engine(services[i], services[i] * 2, 30)

        def at(rate: float) -> RateRun:
            order.append(i)
            return measure(rate)
        return at
    alone = [find_capacity(fake_engine(s, s * 2, 30)[0], start_rps=start, max_runs=runs)
             for s in services]
    together = interleave([capacity_search(start_rps=start, max_runs=runs) for _ in services],
                          [engine(i) for i in range(len(services))])
    assert together == alone
    lengths = [len(c.runs) for c in alone]
    both = min(lengths) * len(services)       # the turns while every search is still going
    assert order[:both] == list(range(len(services))) * min(lengths)
