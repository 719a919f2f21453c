"""The compile cache's note: a run whose graphs the cache holds is projected warm, the next study
reads what this one wrote, and a note that cannot be read projects every run cold."""

from __future__ import annotations

import json
import logging
from dataclasses import replace

import pytest

from probe.bench.compile_history import (
    HISTORY_FILE,
    LOAD_SHARE,
    CompileHistory,
    PastCompile,
)
from probe.bench.experiments import EXPERIMENTS
from probe.bench.experiments.base import OpenLoopExperiment
from probe.bench.progress import COST, START_S, cold_compile_s, estimate_s, serve_s
from probe.bench.study import Study
from probe.contract.figures import CompilePhases
from probe.contract.options import OptConfig
from probe.runs.plan import make_plan
from probe.runs.runs import RunContext

COMPILED = OptConfig(compile="default", decode="fullgraph", bucketing="on")


def _history(tmp_path) -> CompileHistory:
    return CompileHistory(tmp_path, model="t5-small", device="cpu", backend="inductor")


def _study(history: CompileHistory | None = None) -> Study:
    plan = make_plan(model="t5-small", trace_name="chat", device="cpu", quick=False,
                     requests=40, bucket_count=4, seed=0)
    context = RunContext(model="t5-small", device="cpu", loaded=None, max_input=512, repeats=3)
    study = Study.of(plan, ("E1", "E7"), context)
    study.history = history
    return study


def _compiled_run(make_result, *, misses: int, hits: int, load_s: float = 0.0):
    result = make_result(COMPILED, pass_latencies=[[50.0] * 4])
    return replace(result, compile_phases=CompilePhases(26.0, 30.0, 80.0, load_s),
                   cache={"fxgraph_cache_miss": misses, "fxgraph_cache_hit": hits})


def test_a_cold_run_is_remembered_as_its_tracing_and_a_load(tmp_path, make_result) -> None:
    study = _study(_history(tmp_path))
    key = study.units[1][0]
    spec = study.runs[key].spec
    assert spec.options.compiled and study.history is not None
    assert study.history.warm_s(spec) is None                  # nothing cached yet
    study.history.record({key: (spec, _compiled_run(make_result, misses=12, hits=0))})

    later = _history(tmp_path)                                 # the next study
    assert later.warm_s(spec) == pytest.approx(26.0 + LOAD_SHARE * 110.0)
    other = replace(spec, options=replace(spec.options, compile="max-autotune"))
    assert later.warm_s(other) is None                         # another config: cold
    assert later.warm_s(replace(spec, edges=spec.edges[:-1])) is None   # other shapes: cold
    eager = study.runs[study.units[0][0]].spec
    assert later.warm_s(eager) is None


def test_a_warm_run_is_remembered_as_it_measured(tmp_path, make_result) -> None:
    history = _history(tmp_path)
    study = _study(history)
    key = study.units[1][0]
    spec = study.runs[key].spec
    history.record({key: (spec, _compiled_run(make_result, misses=0, hits=12, load_s=3.5))})
    assert _history(tmp_path).warm_s(spec) == pytest.approx(26.0 + 3.5)


def test_the_projection_swaps_the_cold_compile_for_the_warm_one(tmp_path,
                                                                make_result) -> None:
    cold = _study()
    history = _history(tmp_path)
    key = cold.units[1][0]
    spec = cold.runs[key].spec
    history.record({key: (spec, _compiled_run(make_result, misses=12, hits=0))})
    warm = _study(_history(tmp_path))
    passes = cold.passes(key)
    assert estimate_s(spec, model="t5-small", passes=passes) == pytest.approx(
        START_S["t5-small"] + cold_compile_s(spec, model="t5-small")
        + serve_s(spec, model="t5-small", passes=passes))
    assert cold.estimate_s((key,)) - warm.estimate_s((key,)) == pytest.approx(
        cold_compile_s(spec, model="t5-small") - (26.0 + LOAD_SHARE * 110))
    assert warm.estimate_s((key,)) < cold.estimate_s((key,))
    # a study's own runs are projected against the cache it started with, not their own
    history.record({key: (spec, _compiled_run(make_result, misses=0, hits=12, load_s=1.0))})
    assert history.warm_s(spec) is None


def test_an_unreadable_note_projects_cold_and_is_replaced(tmp_path, make_result,
                                                          caplog) -> None:
    (tmp_path / HISTORY_FILE).write_text('{"abc": {"label": 1')
    with caplog.at_level(logging.WARNING):
        history = _history(tmp_path)
    assert history.entries == {} and "unreadable" in caplog.text
    study = _study(history)
    key = study.units[1][0]
    history.record({key: (study.runs[key].spec,
                          _compiled_run(make_result, misses=12, hits=0))})
    written = json.loads((tmp_path / HISTORY_FILE).read_text())
    assert [PastCompile(**v).label for v in written.values()] == [COMPILED.label()]


def test_the_open_loop_experiments_are_in_the_time_left() -> None:
    study = _study()
    estimates = study.estimates()
    assert len(estimates) == len(study.units) + 1
    e7 = EXPERIMENTS["E7"]
    assert isinstance(e7, OpenLoopExperiment)
    assert estimates[len(study.units)] == e7.estimate_s(study.plan) > 0
    progress = study.progress()
    assert progress.runs[len(study.units)].kind == "open loop"
    assert progress.remaining_s() == pytest.approx(sum(estimates.values()))


def test_the_cold_start_pair_is_in_its_runs_estimate() -> None:
    study = _study()
    key = study.units[1][0]                                  # E1's default: the pair's run
    planned = study.runs[key]
    assert [extra.name for extra in planned.extras] == ["cold_start"]
    alone = estimate_s(planned.spec, model="t5-small", passes=study.passes(key))
    assert study.estimate_s((key,)) - alone == pytest.approx(
        2 * START_S["t5-small"] + 3 * COST["t5-small"][0])


def test_a_cold_compile_per_length_stops_at_dynamo_s_recompile_limit() -> None:
    """Without buckets, dynamic off, each function compiles one graph per new length until
    the recompile limit, then runs eager: 37 lengths cost 8 graphs a function, not 37."""
    from probe.bench.progress import COST, RECOMPILE_LIMIT, cold_compile_s
    from probe.contract.options import OptConfig
    from probe.runs.plan import BenchRequest, RunSpec
    options = OptConfig(compile="default", decode="fullgraph")
    many = RunSpec(options, tuple(BenchRequest(f"r{i}", 10 + i, 5) for i in range(37)), "x")
    few = RunSpec(options, tuple(BenchRequest(f"r{i}", 10 + i, 5) for i in range(3)), "x")
    per_compile = COST["t5-small"][0]
    assert cold_compile_s(many, model="t5-small") == 3 * RECOMPILE_LIMIT * per_compile
    assert cold_compile_s(few, model="t5-small") == 3 * 3 * per_compile
