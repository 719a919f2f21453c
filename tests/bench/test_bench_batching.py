"""E7's figures from raw records, checked against brute force."""

import random
from dataclasses import replace

import pytest

from probe.bench.experiments.e7_batching import (
    BatchingResults,
    BatchRoofline,
    batching_run,
    build,
    saturation_rps,
)
from probe.contract.records import RequestRecord
from probe.runs.openloop import open_loop_figures, peak_concurrent_kv_bytes

BASE = RequestRecord(
    id="r", seq=0, config_id="c1", input_tokens=10, padded_tokens=10, output_tokens=5,
    arrival_s=0.0, start_s=0.0, first_token_s=0.1, end_s=1.0, queue_ms=0.0,
    compile_stall_ms=0.0, encoder_ms=1.0, decoder_ms=1.0, ttft_ms=100.0, tpot_ms=10.0,
    latency_ms=1000.0, kv_cache_bytes=100, kv_cache_used_bytes=50,
    kv_self_attention_bytes=60, kv_cross_attention_bytes=40)


def random_records(seed: int, n: int = 12) -> list[RequestRecord]:
    rng = random.Random(seed)
    records = []
    for i in range(n):
        start = rng.uniform(0, 10)
        records.append(replace(BASE, id=f"r{i}", seq=i, arrival_s=start - rng.uniform(0, 1),
                               start_s=start, end_s=start + rng.uniform(0.1, 3),
                               kv_cache_bytes=rng.randint(1, 1000)))
    return records


def test_peak_kv_matches_brute_force_over_every_instant():
    for seed in range(20):
        records = random_records(seed)
        instants = [r.start_s for r in records]
        brute = max(sum(r.kv_cache_bytes for r in records if r.start_s <= t < r.end_s)
                    for t in instants)
        assert peak_concurrent_kv_bytes(records) == brute


def test_back_to_back_requests_do_not_overlap():
    first = replace(BASE, start_s=0.0, end_s=1.0)
    second = replace(BASE, start_s=1.0, end_s=2.0)
    assert peak_concurrent_kv_bytes([first, second]) == BASE.kv_cache_bytes


def test_keeping_up_and_saturation():
    records = [replace(BASE, id=f"r{i}", arrival_s=float(i), start_s=float(i),
                       end_s=float(i) + 0.5) for i in range(10)]
    metrics = open_loop_figures(records, offered_rps=1.0)
    assert abs(metrics.served_rps - 10 / 9.5) < 1e-9 and metrics.keeps_up
    assert not open_loop_figures(records, offered_rps=2.0).keeps_up
    results = BatchingResults({"chat": 1.0}, {
        "a": batching_run("chat", 1.0, "off", records, 1.0, None),
        "b": batching_run("chat", 2.0, "off", records, 2.0, None, 37.4)}, requests=10)
    assert saturation_rps(results, "chat", "off") == 1.0
    built = build(results)
    assert built["id"] == "E7" and len(built["table"]["rows"]) == 2
    columns, (row_a, row_b) = built["table"]["columns"], built["table"]["rows"]
    busy = columns.index("device busy %")
    assert len(row_a) == len(columns) and (row_a[busy], row_b[busy]) == ("—", "37")
    assert results.as_dict()["runs"]["b"]["device_busy_pct"] == 37.4
    assert "kept up to off 1.00 req/s" in built["observed"][0]
    assert results.as_dict()["runs"]["a"]["served_rps"] == metrics.served_rps


def test_a_continuous_step_is_held_against_the_batch_roofline():
    """Weights once per step plus each row's KV: for a row of n tokens over c encoder positions
    the mean positions read per step are c + (n + 1) / 2 (recomputed here position by position)."""
    per_position, c, n = 100, 12, 5
    records = [replace(BASE, id=f"r{i}", output_tokens=n, batch_size=4.0, tpot_ms=2.0,
                       kv_cache_used_bytes=per_position * (c + n)) for i in range(3)]
    roofline = BatchRoofline(weight_bytes=1_000_000, kv_bytes_per_position=per_position,
                             bandwidth_gb_s=1.0)
    kv_per_step = sum(per_position * (c + t) for t in range(1, n + 1)) / n
    expected_ms = (1_000_000 + 4 * kv_per_step) / 1e9 * 1e3
    run = batching_run("chat", 4.0, "continuous", records, 1.0, roofline)
    assert run.roofline_step_ms == pytest.approx(expected_ms)
    assert run.step_ms == 2.0 and run.roofline_ratio == pytest.approx(2.0 / expected_ms)
    assert batching_run("chat", 4.0, "dynamic", records, 1.0, roofline).roofline_ratio is None
    built = build(BatchingResults({"chat": 1.0}, {"x": run}, roofline))
    assert built["table"]["rows"][0][-1] == f"{2.0 / expected_ms:.2f}×"
    assert any("batch roofline" in line for line in built["observed"])
