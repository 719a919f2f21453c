"""Every percentile the engine reports equals numpy's on that segment's raw records."""

from dataclasses import replace

import numpy as np
import pytest

from probe.analysis.live_figures import window_stats
from probe.analysis.stats import segment_stats, session_segments, throughput_rps, tokens_per_s
from probe.runs.openloop import open_loop_figures
from tests.conftest import serve


def test_segment_percentiles_match_numpy(make_engine):
    engine = make_engine("decode=fullgraph")
    serve(engine, [(5 + i, 2 + i % 4) for i in range(9)])
    engine.set_options(engine.options.with_option("kv_cache", "off"))
    serve(engine, [(6 + i, 3) for i in range(5)], start_seq=9)
    data = engine.session.freeze()
    segments = session_segments(data)
    assert [s.config_id for s in segments] == ["c1", "c2"]
    for segment in segments:
        records = [r for r in data.records if r.config_id == segment.config_id]
        assert segment.requests == len(records)
        for field in ("latency_ms", "ttft_ms", "tpot_ms"):
            values = np.array([getattr(r, field) for r in records if getattr(r, field) is not None])
            summary = getattr(segment, field)
            for q in (50, 95, 99):
                assert getattr(summary, f"p{q}") == pytest.approx(np.percentile(values, q))
            assert summary.max == pytest.approx(values.max())
        tokens = sum(r.output_tokens for r in records)
        span = max(r.end_s for r in records) - min(r.start_s for r in records)
        assert segment.tokens_per_s == pytest.approx(tokens / span)


def test_timings_are_consistent(make_engine):
    engine = make_engine("decode=fullgraph")
    for r in serve(engine, [(7, 5), (9, 1)]):
        assert r.arrival_s <= r.start_s <= r.first_token_s <= r.end_s
        assert r.latency_ms == pytest.approx((r.end_s - r.arrival_s) * 1000)
        assert r.queue_ms == pytest.approx((r.start_s - r.arrival_s) * 1000)
        assert r.ttft_ms == pytest.approx((r.first_token_s - r.arrival_s) * 1000)
        assert r.encoder_ms > 0 and r.decoder_ms > 0
    assert r.tpot_ms is None  # one output token has no time *per* further token


def test_throughput_counts_served_requests_over_the_span_of_all_records(make_engine):
    engine = make_engine("decode=fullgraph")
    served = serve(engine, [(7, 2), (7, 2)])
    failed = replace(served[-1], id="x", seq=2, start_s=served[-1].end_s,
                     end_s=served[-1].end_s + 5.0, error="RuntimeError: boom")
    records = [*served, failed]
    span = failed.end_s - served[0].start_s          # failed ones stretch the span
    assert throughput_rps(records) == pytest.approx(2 / span)
    assert tokens_per_s(records) == pytest.approx(4 / span)
    # the live window, the segment and the bench's E7 say the same for the same records
    assert window_stats(tuple(records)).throughput_rps == throughput_rps(records)
    segment = segment_stats("c1", records, [], [])
    assert (segment.throughput_rps, segment.failed) == (throughput_rps(records), 1)
    assert open_loop_figures(records, offered_rps=1.0).served_rps == throughput_rps(records)


def test_compile_phases_add_each_compiles_split_and_count_a_cached_ones_aot_as_loading():
    from probe.analysis.stats import compile_phases
    from probe.contract.records import CompileEvent

    def event(kind="compile", **split):
        return CompileEvent("0/0", kind, "f", 0.0, 1.0, None, None, "c1", **split)

    built = event(tracing_s=1.0, aot_s=0.5, inductor_s=2.0, from_cache=False)
    loaded = event("recompile", tracing_s=0.25, aot_s=0.75, inductor_s=0.0, from_cache=True)
    unknown = event(tracing_s=0.5, aot_s=0.25, inductor_s=0.0)          # no cache counts
    phases = compile_phases([built, loaded, unknown, event(), event("fallback", tracing_s=9.0)])
    assert (phases.tracing_s, phases.aot_s, phases.inductor_s, phases.cache_load_s) == (
        1.75, 0.75, 2.0, 0.75)
    assert phases.total_s == 5.25 and phases.largest_share() == "38% inductor"
    assert compile_phases([event(), event("limit")]) is None            # saved before the split
