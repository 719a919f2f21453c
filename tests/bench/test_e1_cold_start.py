"""E1's cold start from scratch and from the compile cache: the section's figures from the pair,
and the pair itself run for real (two fresh processes, t5-tiny)."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from probe.bench.experiments import EXPERIMENTS
from probe.bench.experiments.base import REFERENCE
from probe.bench.report import render_markdown
from probe.runs.cold_start import ColdStartFigures, measure_pair
from probe.runs.plan import BenchRequest, Plan

REQUESTS = tuple(BenchRequest(f"r{i}", n, 6) for i, n in enumerate((20, 35)))


def _plan() -> Plan:
    return Plan(model="t5-tiny", trace="chat", device="cpu", quick=True, requests=REQUESTS,
                bucket_count=2, planner_edges=(35,), pow2_edges=(32, 64),
                trace_input_lengths=(20, 35), trace_output_lengths=(6, 6))


def _section(make_result, figures: ColdStartFigures | None) -> dict:
    plan = _plan()
    experiment = EXPERIMENTS["E1"]
    specs = experiment.runs(plan)
    results = {}
    for role, spec in specs.items():
        result = make_result(spec.options, pass_latencies=[[100.0, 100.0], [100.0, 100.0]],
                             edges=spec.edges, edges_name=spec.edges_name,
                             requests_name=spec.requests_name)
        results[role] = replace(result, cold_start=figures) if role == "default" else result
    return experiment.build(plan, results, {"device": "cpu"})


def test_e1_asks_for_the_pair_on_its_compiled_default_run_but_not_under_quick() -> None:
    full = replace(_plan(), quick=False)
    assert [e.name for e in EXPERIMENTS["E1"].extras(full)["default"]] == ["cold_start"]
    assert EXPERIMENTS["E1"].extras(replace(full, quick=True)) == {}


def test_e1_reports_both_cold_starts_and_their_ratio(make_result) -> None:
    figures = ColdStartFigures(
        options=REFERENCE.label(), scratch_ms=80_000.0, cache_ms=6_000.0,
        scratch_compile_s=78.0, cache_compile_s=4.5, scratch_process_s=95.0,
        cache_process_s=20.0, loaded=3, compiled_on_restart=0, traced_on_restart=0,
        tokens_equal=True)
    section = _section(make_result, figures)
    cold = json.loads(json.dumps(section))["cold_start"]
    assert cold["scratch_ms"] == 80_000.0 and cold["cache_ms"] == 6_000.0
    assert cold["ratio"] == pytest.approx(6_000.0 / 80_000.0)
    assert any("7.5% of the full compile" in line for line in section["observed"])
    markdown = render_markdown({"experiments": {"E1": section}, "environment": {},
                                "settings": {}, "plan": {}})
    assert "Cold start: fresh process" in markdown and "7.5%" in markdown


def test_a_failed_pair_is_said_and_nothing_else_breaks(make_result) -> None:
    section = _section(make_result, ColdStartFigures.failed("compile=default", "boom"))
    assert section["cold_start"]["error"] == "boom"
    assert any("not measured (boom)" in line for line in section["observed"])
    assert not section["extra_tables"]
    assert _section(make_result, None)["cold_start"] is None


@pytest.mark.slow
def test_the_pair_restarts_from_the_cache_in_a_fresh_process() -> None:
    """On dynamo's eager backend (the bench's `--compile-backend eager` passes it too), whose
    graphs save as well: the pair's two processes, cache and figures without inductor's
    minute of code generation (tests/probe/test_compile_cache.py restarts inductor's)."""
    options = "compile=default decode=fullgraph compile_cache=on"
    figures = measure_pair("t5-tiny", options, input_length=12, output_length=4, threads=1,
                           backend="eager")
    assert figures.error is None
    assert figures.tokens_equal
    assert figures.loaded >= 3 and figures.compiled_on_restart == 0
    assert figures.traced_on_restart == 0          # dynamo traced nothing on the restart
    assert figures.scratch_compile_s > 0 and figures.cache_compile_s > 0
