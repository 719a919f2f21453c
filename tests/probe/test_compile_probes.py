"""Compile events and graph breaks, checked against what dynamo itself counts.

Most use the "eager" backend: dynamo traces, guards, recompiles and breaks exactly as with
inductor, without inductor's code generation, so these tests take seconds, not minutes."""

import pytest
import torch

from probe.analysis.stats import session_segments
from tests.conftest import serve, tokens_of


def compiles(engine, kind=None, function=None):
    return [e for e in engine.session.freeze().events
            if (kind is None or e.kind == kind) and (function is None or e.function == function)]


def test_fullgraph_has_no_breaks_and_matches_hf_tokens(make_engine):
    shapes = [(9, 6), (9, 6), (13, 4)]
    reference = make_engine("decode=hf-generate")
    serve(reference, shapes)
    breaks_before = sum(torch._dynamo.utils.counters["graph_break"].values())  # process-wide
    compiled = make_engine("decode=fullgraph", "compile=default")
    records = serve(compiled, shapes)
    assert all(r.ok for r in records)
    assert compiled.session.freeze().breaks == ()
    assert sum(torch._dynamo.utils.counters["graph_break"].values()) == breaks_before
    assert tokens_of(compiled) == tokens_of(reference)
    assert len({tuple(t) for t in tokens_of(reference).values()}) > 1  # not a degenerate model


def test_dynamic_off_recompiles_for_every_new_length(make_engine):
    """And, on the eager backend, which runs neither AOTAutograd nor inductor, each compile is
    all dynamo's tracing and the segment adds up the split."""
    lengths = [8, 11, 14, 17]
    engine = make_engine("decode=fullgraph", "compile=default", "dynamic=off")
    records = serve(engine, [(n, 3) for n in lengths])
    assert all(r.ok for r in records)
    recompiles = compiles(engine, "recompile", "encode")
    assert len(recompiles) >= len(lengths) - 1
    for event in recompiles:
        assert "size mismatch" in event.reason
    assert "expected 8, actual 11" in recompiles[0].reason
    # Each request's compile stall is the sum of the compiles it waited on.
    for record in records:
        waited = sum(e.duration_s for e in compiles(engine) if e.request_id == record.id)
        assert record.compile_stall_ms == pytest.approx(waited * 1000, rel=1e-6, abs=1e-6)
    assert records[1].compile_stall_ms > 0

    metrics = {str(m.compile_id): m for m in torch._dynamo.utils.get_compilation_metrics()}
    events = compiles(engine, "compile") + compiles(engine, "recompile")
    assert len(events) >= 4
    for event in events:
        assert event.inductor_s == 0 and event.aot_s < 0.01 * event.tracing_s
        assert event.tracing_s + event.aot_s == pytest.approx(
            metrics[event.compile_id].duration_us / 1e6)
    (segment,) = session_segments(engine.session.freeze())
    assert segment.compile_phases.tracing_s == pytest.approx(sum(e.tracing_s for e in events))
    assert segment.compile_phases.total_s == pytest.approx(segment.compile_s, rel=0.2)
    assert segment.as_dict()["compile_phases"]["tracing_s"] == segment.compile_phases.tracing_s


def test_dynamic_on_compiles_each_function_once_for_all_lengths(make_engine):
    engine = make_engine("decode=fullgraph", "compile=default", "dynamic=on")
    serve(engine, [(n, 3) for n in (8, 11, 14, 17)])
    assert len(compiles(engine, function="encode")) == 1


def test_bucketing_with_prewarm_serves_without_compiling(make_engine):
    buckets = (16, 32)
    engine = make_engine("decode=fullgraph", "compile=default", "bucketing=on", "prewarm=on",
                         buckets=buckets)
    assert engine.prewarm() == len(buckets)
    warmed = len(compiles(engine))
    records = serve(engine, [(n, 3) for n in (5, 9, 16, 20, 31, 7)])
    assert {r.padded_tokens for r in records} == set(buckets)
    assert len(compiles(engine)) == warmed
    assert all(r.compile_stall_ms == 0 for r in records)
    segment = session_segments(engine.session.freeze())[0]
    # one graph per compiled function (encode, prefill_step, decode_step) and bucket shape
    assert segment.graphs <= 3 * len(buckets)
    for function in ("encode", "prefill_step", "decode_step"):
        assert len(compiles(engine, function=function)) <= len(buckets)


@pytest.mark.slow
def test_hf_generate_under_compile_reports_graph_breaks(make_engine):
    breaks_before = sum(torch._dynamo.utils.counters["graph_break"].values())  # process-wide
    engine = make_engine("decode=hf-generate", "compile=default")
    record = serve(engine, [(9, 4)])[0]
    assert record.ok, record.error
    breaks = engine.session.freeze().breaks
    assert sum(b.count for b in breaks) >= 1
    assert all(b.reason and ":" in b.location for b in breaks)
    assert any("generation/utils.py" in b.location for b in breaks)
    # dynamo's own counter agrees that breaks happened
    assert sum(torch._dynamo.utils.counters["graph_break"].values()) > breaks_before
    segment = session_segments(engine.session.freeze())[0]
    assert segment.graphs == sum(e.graphs for e in compiles(engine)) > 1
    # breaks are what dynamo logged; sites are the distinct code locations among them
    assert segment.graph_breaks == sum(b.count for b in breaks)
    assert segment.graph_break_sites == len({b.location for b in breaks}) >= 1


@pytest.mark.slow
def test_inductor_fullgraph_decode_matches_eager_tokens(make_engine):
    shapes = [(9, 5), (9, 5)]
    eager = make_engine("decode=fullgraph")
    serve(eager, shapes)
    compiled = make_engine("decode=fullgraph", "compile=default", backend="inductor")
    records = serve(compiled, shapes)
    assert tokens_of(compiled) == tokens_of(eager)
    assert records[0].compile_stall_ms > 0 and records[1].compile_stall_ms == 0
    assert [e.function for e in compiles(compiled, "compile")] == [
        "encode", "prefill_step", "decode_step"]
    # each compile's split is dynamo's: the phases add up to its whole duration of that compile,
    # and inductor's part is its own cumulative time
    metrics = {str(m.compile_id): m for m in torch._dynamo.utils.get_compilation_metrics()}
    for event in compiles(compiled):
        dynamo = metrics[event.compile_id]
        assert event.tracing_s + event.aot_s + event.inductor_s == pytest.approx(
            dynamo.duration_us / 1e6)
        # None where the compiled graph came from inductor's caches (a warm machine): then
        # inductor did not run, and loading the cached graph is AOTAutograd's time
        assert event.inductor_s == (dynamo.inductor_cumulative_compile_time_us or 0) / 1e6
        assert event.tracing_s > 0 and event.aot_s > 0
        assert event.from_cache == (dynamo.inductor_cumulative_compile_time_us is None)

