"""The synthetic session is realistic where tests and screenshots rely on it, and the figures
the dashboard shows (computed by probe.contract.live) agree with a second computation here."""

from __future__ import annotations

import statistics

from tests.tui.synthetic import BUCKET_EDGES, MAX_BATCH, session_at, stage


def test_baseline_is_eager_and_steady(stages):
    baseline = stages["baseline"]
    assert baseline.config_id == "c1" and baseline.options.label() == "baseline"
    assert baseline.compile_events == () and baseline.graph_breaks == ()
    assert baseline.compiling is None and not baseline.replay.overloaded
    tpot = sorted(r.tpot_ms for r in baseline.recent)
    assert 17 < statistics.median(tpot) < 18.5                # the fixture's hand-set 17-18 ms/token


def test_compiling_waits_on_the_first_compile_and_the_queue_grows(stages):
    compiling = stages["compiling"]
    assert compiling.options.compile == "default"
    running = compiling.compiling
    assert running is not None and running.compile_id == "0/0" and running.function is None
    assert int(running.stall_s(compiling.t_s)) == 23 and running.waited_before_s == 0
    assert running.request_id == compiling.compiling_request == "req-0060"
    assert running.since_s == compiling.compiling_since_s
    # the queue grows behind the compile, though the offered load is within capacity
    assert compiling.replay.queue_depth > 4 and not compiling.replay.overloaded
    assert not [r for r in compiling.recent if r.config_id == "c2"]   # none served yet


def test_compiled_has_recompiles_on_size_mismatch_and_generate_graph_breaks(stages):
    compiled = stages["compiled"]
    kinds = [e.kind for e in compiled.compile_events]
    assert kinds == ["compile", "recompile", "recompile", "recompile"]
    assert all("size mismatch" in e.reason for e in compiled.compile_events[1:])
    assert compiled.compile_events[0].duration_s > 60          # its hand-set ~62 s first compile
    assert sum(b.count for b in compiled.graph_breaks) == 12   # its hand-set 12 breaks in generate
    assert all(b.config_id == "c2" for b in compiled.graph_breaks)


def test_bucketing_pads_to_the_edges(stages):
    bucketing = stages["bucketing"]
    assert bucketing.options.bucketing == "on" and bucketing.bucket_edges == BUCKET_EDGES
    c3 = [r for r in bucketing.recent if r.config_id == "c3"]
    assert c3 and all(r.padded_tokens in BUCKET_EDGES for r in c3)
    assert all(r.padded_tokens >= r.input_tokens for r in c3)
    assert [s.config_id for s in bucketing.segments] == ["c1", "c2", "c3"]


def test_window_and_segment_percentiles_recomputed_another_way(stages):
    compiled = stages["compiled"]
    window = [r.latency_ms for r in compiled.recent if r.ok][-200:]
    assert compiled.window.requests == len(window)
    assert abs(compiled.window.latency_ms.p50 - statistics.median(window)) < 1e-6
    # p95 by linear interpolation between order statistics, as numpy's default
    ordered = sorted(window)
    rank = 0.95 * (len(ordered) - 1)
    low = int(rank)
    p95 = ordered[low] + (ordered[low + 1] - ordered[low]) * (rank - low)
    assert abs(compiled.window.latency_ms.p95 - p95) < 1e-6
    segment = next(s for s in compiled.segments if s.config_id == "c2")
    c2 = [r for r in session_at(compiled.t_s, "c2").records if r.config_id == "c2"]
    assert segment.requests == len(c2)
    assert segment.recompiles == 3 and segment.compiles == 1


def test_stages_are_deterministic():
    assert stage("compiled") == stage("compiled")


def test_paged_serves_from_blocks_of_a_pool_with_the_static_slots_budget(stages):
    paged = stages["paged"]
    c4, c5 = (next(s for s in paged.segments if s.config_id == cid) for cid in ("c4", "c5"))
    assert paged.options.kv_layout == "paged" and c4.kv_pool is None
    pool = c5.kv_pool
    assert pool.budget_bytes == MAX_BATCH * pool.static_slot_bytes
    assert pool.blocks_used <= pool.blocks_peak <= pool.blocks_total
    records = [r for r in paged.recent if r.config_id == "c5"]
    assert all(r.kv_cache_bytes % pool.block_bytes == 0 for r in records)   # whole blocks
    assert all(r.kv_cache_bytes == pool.static_slot_bytes
               for r in paged.recent if r.config_id == "c4")              # whole slots
    # waste recomputed from the records: the static slots waste most of what they hold
    held = sum(r.kv_cache_bytes for r in records)
    used = sum(r.kv_cache_used_bytes for r in records)
    assert c5.kv_waste_pct == 100 * (held - used) / held
    assert c5.kv_waste_pct <= 10 < 60 < c4.kv_waste_pct


def test_measured_has_drift_roofline_and_break_even(stages):
    measured = stages["measured"]
    c1, c2 = (next(s for s in measured.segments if s.config_id == cid) for cid in ("c1", "c2"))
    assert c1.drift.token_agreement == 1.0 and c1.drift.exact_match == 1.0
    assert 0.9 < c2.drift.token_agreement < 1.0 and 0.5 < c2.drift.exact_match < 1.0
    sampled = [r for r in measured.recent if r.config_id == "c2" and r.tokens is not None]
    assert c2.drift.sampled_requests == len(sampled)
    assert measured.roofline is not None and measured.roofline.precision == "fp32"
    assert measured.break_even.compiled_config == "c2"
    assert measured.break_even.eager_config == "c1"
