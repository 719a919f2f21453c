"""Warm and cold requests, capacity and the backlog a compile leaves: on synthetic records."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from probe.analysis.live_figures import capacity_rps as live_capacity_rps
from probe.analysis.stats import segments, session_segments
from probe.analysis.steady_state import (
    backlog,
    backlog_dominated,
    capacity_from_service_s,
    capacity_rps,
    cold_chain,
    warm_stats,
)
from probe.contract.records import CompileEvent, CompileInProgress, RequestRecord


def request(seq: int, arrival: float, start: float, end: float, *, stall_ms: float = 0.0,
            config: str = "c1", batch: float = 1) -> RequestRecord:
    return RequestRecord(
        id=f"r{seq}", seq=seq, config_id=config, input_tokens=8, padded_tokens=8,
        output_tokens=4, arrival_s=arrival, start_s=start, first_token_s=start + 0.1,
        end_s=end, queue_ms=(start - arrival) * 1e3, compile_stall_ms=stall_ms, encoder_ms=1,
        decoder_ms=1, ttft_ms=(start + 0.1 - arrival) * 1e3, tpot_ms=10.0,
        latency_ms=(end - arrival) * 1e3, kv_cache_bytes=0, kv_cache_used_bytes=0,
        kv_self_attention_bytes=0, kv_cross_attention_bytes=0, batch_size=batch)


def serial(arrivals: list[float], service: list[float], stalls: dict[int, float]) -> list[RequestRecord]:
    """One server, first come first served: each request starts when it arrived and the one
    before it ended; `stalls` adds a compile stall (seconds) to a request's service."""
    records, free_at = [], 0.0
    for seq, (arrival, busy) in enumerate(zip(arrivals, service)):
        start = max(arrival, free_at)
        stall = stalls.get(seq, 0.0)
        free_at = start + busy + stall
        records.append(request(seq, arrival, start, free_at, stall_ms=stall * 1e3))
    return records


def test_a_compile_makes_its_request_and_the_backlog_behind_it_cold_until_the_queue_drains():
    # one per second, 0.5 s each; request 2 waits 10 s on a compile: 3..12 arrive behind it
    records = serial([float(i) for i in range(40)], [0.5] * 40, {2: 10.0})
    chain = cold_chain(records, [])
    cold = sorted(r.seq for r in records if not chain.is_warm(r))
    assert cold[0] == 2 and 0 not in cold and 1 not in cold
    # the backlog: every request that arrived before the cold one ahead of it ended
    for r in records:
        ahead = [c for c in records if c.seq < r.seq and c.seq in cold]
        behind_cold = any(r.arrival_s < c.end_s for c in ahead)
        assert (r.seq in cold) == (r.compile_stall_ms > 0 or behind_cold)
    assert cold[-1] < 39                                   # it drains
    assert all(chain.source[(r.seq, r.id)] == "c1" for r in records if r.seq in cold)


def test_a_prewarm_compile_between_requests_makes_the_requests_queued_during_it_cold():
    records = serial([0.0, 1.0, 2.0, 30.0], [0.5] * 4, {})
    # a prewarm for c2 ran 2.5..20 s: request 2 arrived at 2 s and (say) started at 20 s
    records[2] = request(2, 2.0, 20.0, 20.5)
    event = CompileEvent("0/0", "compile", "decode_step", 2.5, 17.5, None, None, "c2")
    chain = cold_chain(records, [event])
    assert [chain.is_warm(r) for r in records] == [True, True, False, True]
    assert chain.source[(2, "r2")] == "c2"


@given(st.lists(st.tuples(st.floats(0.01, 3.0), st.floats(0.05, 2.0),
                          st.sampled_from([0.0, 0.0, 0.0, 5.0])), min_size=1, max_size=40))
def test_a_warm_request_waited_on_no_compile_and_queued_behind_no_cold_request(draws):
    arrivals, t = [], 0.0
    for gap, _, _ in draws:
        t += gap
        arrivals.append(t)
    records = serial(arrivals, [d[1] for d in draws],
                     {i: d[2] for i, d in enumerate(draws) if d[2]})
    chain = cold_chain(records, [])
    for r in records:
        if chain.is_warm(r):
            assert r.compile_stall_ms == 0
            assert all(c.end_s <= r.arrival_s for c in records
                       if c.seq < r.seq and not chain.is_warm(c))
        else:
            assert r.compile_stall_ms > 0 or any(
                c.arrival_s <= r.arrival_s < c.end_s for c in records
                if c.seq < r.seq and not chain.is_warm(c))
    stats = warm_stats(records, chain)
    assert stats.requests + stats.cold == len(records)


def test_warm_figures_leave_out_the_backlog_and_capacity_leaves_out_the_stalls():
    records = serial([float(i) for i in range(40)], [0.5] * 40, {2: 10.0})
    chain = cold_chain(records, [])
    warm = warm_stats(records, chain)
    assert warm.latency_ms.max == pytest.approx(500.0)          # no queue wait at all
    assert warm.cold > 0 and warm.requests == 40 - warm.cold
    # service 0.5 s for every request not itself stalled; the stalled one left out
    assert capacity_rps(records) == pytest.approx(2.0)
    assert live_capacity_rps(records) == capacity_rps(records)  # one definition
    # a batch's time is shared by its rows
    assert capacity_rps([request(0, 0, 0, 1.0, batch=4)]) == pytest.approx(4.0)


def test_the_backlog_names_the_config_that_compiled_and_its_drain_time():
    records = serial([float(i) for i in range(8)], [0.5] * 8, {2: 30.0})
    for r in records[2:]:
        records[r.seq] = request(r.seq, r.arrival_s, r.start_s, r.end_s,
                                 stall_ms=r.compile_stall_ms, config="c2")
    chain = cold_chain(records, [])
    left = backlog(records, chain, queue_depth=20, offered_rps=1.0, capacity=2.0,
                   compiling=None, config_id="c2")
    assert left is not None and left.source_config == "c2"
    assert left.drain_s == pytest.approx(20 / (2.0 - 1.0))
    # offered at or above capacity: it does not drain
    assert backlog(records, chain, 20, 2.5, 2.0, None, "c2").drain_s is None
    # no queue, no backlog; a warm latest request: the chain has ended
    assert backlog(records, chain, 0, 1.0, 2.0, None, "c2") is None
    warm_only = serial([0.0, 1.0], [0.5, 0.5], {})
    assert backlog(warm_only, cold_chain(warm_only, []), 5, 1.0, 2.0, None, "c1") is None
    # a compile running with a queue is a backlog that still grows
    running = CompileInProgress("1/0", "decode_step", "r7", 7.0, 0.0)
    growing = backlog(warm_only, cold_chain(warm_only, []), 5, 1.0, 2.0, running, "c3")
    assert growing is not None and growing.compiling and growing.source_config == "c3"
    assert backlog_dominated(warm_stats(records, chain), left)


def test_segments_carry_the_warm_figures_in_the_session_json():
    records = serial([float(i) for i in range(40)], [0.5] * 40, {2: 10.0})
    (segment,) = segments(["c1"], records, [], [])
    assert segment.warm is not None
    saved = segment.as_dict()["warm"]
    assert saved["requests"] == segment.warm.requests and saved["cold"] == segment.warm.cold
    assert saved["latency_ms"]["p95"] < segment.latency_ms.p95


def test_snapshot_show_gives_the_warm_figures_beside_all(tmp_path):
    import json
    from types import MappingProxyType

    from probe.contract.options import OptConfig
    from probe.contract.session import ConfigEntry, SessionData
    from probe.session_store.snapshot import snapshot_document
    from probe.session_store.snapshot_report import show

    records = serial([float(i) for i in range(40)], [0.5] * 40, {2: 10.0})
    data = SessionData(records=tuple(records),
                       configs=MappingProxyType({"c1": ConfigEntry("c1", OptConfig())}))
    path = tmp_path / "s.json"
    path.write_text(json.dumps(snapshot_document(
        data, environment={"device": "cpu"}, model={"name": "t5-tiny"}, trace={"name": "x"})))
    text = show(str(path))
    header = next(line for line in text.splitlines() if line.startswith("config"))
    row = next(line for line in text.splitlines() if line.startswith("c1 "))
    warm = session_segments(data)[0].warm
    assert "warm" in header and str(warm.requests) in row
    assert "500 ms" in row                     # warm p50: the service time alone


served_rows = st.lists(st.tuples(st.floats(min_value=1e-4, max_value=100.0),     # service s
                                 st.integers(min_value=1, max_value=8),          # batch rows
                                 st.booleans(), st.booleans()),                  # stalled, failed
                       max_size=60)


@given(served_rows)
def test_capacity_is_one_over_the_mean_warm_service_time(rows):
    """The one capacity definition (calibration, bench, tune, the doctor and the live window
    all call it), against its definition computed here on its own: 1 ÷ the arithmetic mean
    of (end − start) ÷ batch rows over the served requests that waited on no compile."""
    records = [replace(request(i, float(i), float(i), float(i) + service, batch=rows_,
                               stall_ms=5.0 if stalled else 0.0),
                       error="boom" if failed else None)
               for i, (service, rows_, stalled, failed) in enumerate(rows)]
    warm = [service / rows_ for service, rows_, stalled, failed in rows
            if not stalled and not failed]
    expected = len(warm) / math.fsum(warm) if warm else None
    assert capacity_rps(records) == pytest.approx(expected, rel=1e-6)
    assert capacity_from_service_s(warm) == pytest.approx(expected, rel=1e-6)
    assert live_capacity_rps(records) == capacity_rps(records)
