"""Sections, verdicts, checks and report.md from synthetic run results."""

import json
import math
from dataclasses import replace

import pytest

from probe.bench.experiments import (
    EXPERIMENTS,
    acceptance_checks,
    select_experiments,
)
from probe.bench.experiments.base import REFERENCE, Experiment
from probe.bench.experiments.e4_bucketing import COMPUTED_NOTE
from probe.bench.experiments.e6_combined import STEPS as E6_STEPS
from probe.bench.experiments.observer import OBSERVER
from probe.bench.experiments.roofline import LEVERS
from probe.bench.report import render_markdown
from probe.bench.study import collect_runs
from probe.common.errors import BadInput
from probe.common.units import fmt_ms
from probe.contract.options import OptConfig
from probe.runs.plan import BenchRequest, Plan
from probe.runs.results import FailedRun, ObserverFigures, RunResult
from probe.runs.spread import Spread

# the experiments served back to back (E7 and E8 replay open loop with engines of their own)
STUDY = tuple(n for n in select_experiments(None) if isinstance(EXPERIMENTS[n], Experiment))
REQUESTS = tuple(BenchRequest(f"r{i}", n, 8) for i, n in enumerate((20, 35, 60, 90)))


@pytest.fixture
def plan() -> Plan:
    """The full study's shape; its outputs' 10th, 50th, 95th percentiles: 4, 16, 64 tokens."""
    return Plan(model="t5-tiny", trace="chat", device="cpu", quick=False, requests=REQUESTS,
                bucket_count=2, planner_edges=(35, 90), pow2_edges=(32, 64, 128),
                trace_input_lengths=(20, 35, 60, 90, 90),
                trace_output_lengths=(4,) * 3 + (16,) * 16 + (64,) * 2)


def test_select_experiments() -> None:
    assert select_experiments(None) == ("E1", "E2", "E3", "E4", "E5", "E6", "E7", "E8",
                                        "roofline", "observer")   # capacity, peers by name
    assert select_experiments("e4, E2,roofline,E7") == ("E2", "E4", "E7", "roofline")
    assert select_experiments("e8,E1") == ("E1", "E8")
    with pytest.raises(BadInput, match="unknown experiment 'E9'"):
        select_experiments("E9")


def test_each_experiment_keeps_its_runs_report_and_checks_in_one_module() -> None:
    for name, experiment in EXPERIMENTS.items():
        assert experiment.template.id == name
        parts = ([experiment.runs, experiment.build] if isinstance(experiment, Experiment)
                 else [experiment.measure])
        if experiment.checks.__name__ != "no_checks":
            parts.append(experiment.checks)
        modules = {part.__module__ for part in parts}
        assert len(modules) == 1 and modules.pop().startswith("probe.bench.experiments."), name
    assert STUDY == ("E1", "E2", "E3", "E4", "E5", "E6", "roofline", "observer")


def test_shared_configs_run_once(plan) -> None:
    runs, units = collect_runs(plan, STUDY)
    assert sorted(k for unit in units for k in unit) == sorted(runs)   # each run once
    e5 = [unit for unit in units if len(unit) == 2]
    assert len(e5) == 3 and all("kv_cache=off" in unit[1] for unit in e5)
    reference = plan.spec(REFERENCE)
    users = runs[reference.key].users
    assert {"E1", "E2", "E4", "E6", "roofline", "observer"} <= {e for e, _ in users}
    assert OBSERVER in runs[reference.key].extras          # extras merged onto the shared run
    unbucketed = plan.spec(OptConfig(compile="default", decode="fullgraph"), edges="none")
    assert {("E3", "off"), ("E4", "none")} <= set(runs[unbucketed.key].users)
    assert len({planned.spec.key for planned in runs.values()}) == len(runs)
    # one variable at a time: E4's planner and unbucketed runs differ only in bucketing
    planner, none = EXPERIMENTS["E4"].runs(plan)["planner"], EXPERIMENTS["E4"].runs(plan)["none"]
    assert planner.options == none.options.with_option("bucketing", "on")
    assert planner.edges != none.edges


OBSERVED = ObserverFigures(
    probes_on_tokens_per_s=Spread(99.0, 97.0, 101.0, 2),
    probes_off_tokens_per_s=Spread(100.0, 98.0, 102.0, 2), overhead_fraction=0.01,
    verdict="within noise", comparison="within noise (1.01× slower by the medians)",
    order=("on", "off", "off", "on"), bookkeeping_us_per_request=12.0, bookkeeping_fraction=1e-4)


def _results(plan, make_result, *, fail: bool = False) -> dict[str, RunResult]:
    """Every run of the study, faked: compiled runs are 2× faster than eager ones. With `fail`,
    every property the checks look for is broken instead: the fullgraph loop breaks, recompiles
    do not grow, no bucketing, the cache slows long outputs, and one E6 step lost requests."""
    results = {}
    for name in STUDY:
        for spec in EXPERIMENTS[name].runs(plan).values():
            if spec.key in results:
                continue
            o = spec.options
            base = 100.0 if o.compiled and o.decode == "fullgraph" else 200.0
            if o.kv_cache == "off":
                base *= 1 + spec.max_new_tokens / 16      # grows with the output length
            if fail and o.kv_cache == "on" and not o.compiled:
                base *= 100                               # the cache loses on long outputs
            compiles = []
            if o.compiled:
                compiles = [("encode", "compile", "r0@warm-up"), ("decode_step", "compile", "r0@warm-up")]
                if o.bucketing == "off" and o.dynamic == "off" and not fail:
                    compiles += [("encode", "recompile", f"r{i}@warm-up") for i in (1, 2, 3)]
                if fail and o.bucketing == "on":          # more shapes than K buckets
                    compiles += [("encode", "recompile", f"r{i}@warm-up") for i in (1, 2, 3)]
            breaks = ([("Unsupported Tensor.item() call", "generation/utils.py:396", 3)]
                      if o.compiled and (o.decode == "hf-generate" or fail) else [])
            padded = None
            if o.bucketing == "on":
                from workloads.buckets import bucket_for
                padded = [bucket_for(r.input_length, spec.edges) for r in spec.requests]
                if fail:                                  # pad everything to the widest
                    padded = [max(spec.edges)] * len(spec.requests)
            result = make_result(
                o, pass_latencies=[[base] * len(spec.requests), [base * 1.02] * len(spec.requests)],
                inputs=[r.input_length for r in spec.requests], padded=padded, compiles=compiles,
                breaks=breaks, kv_bytes=4096 if o.kv_cache == "on" else 0,
                edges=spec.edges, edges_name=spec.edges_name, requests_name=spec.requests_name)
            result = replace(result, weight_bytes=800_000 if o.precision == "fp32" else 400_000,
                             observer=OBSERVED if o == REFERENCE else None)
            if fail and o == E6_STEPS[5][1]:
                result = replace(result, failed=2, errors=("RuntimeError: out of memory",))
            results[spec.key] = result
    return results


def _sections(plan, results, env=None):
    env = env or {"device": "cpu", "roofline": {
        "step_bytes": {"decoder_layers": 600_000, "cross_kv_skipped": 50_000, "lm_head": 200_000,
                       "total": 800_000},
        "bandwidth": {"read_gb_s": 20.0}, "matmul_gflops": 100.0}}
    return {name: EXPERIMENTS[name].build(
        plan, {role: results.get(spec.key) for role, spec in EXPERIMENTS[name].runs(plan).items()},
        env) for name in STUDY}


def test_sections_follow_the_template_and_checks_pass(plan, make_result) -> None:
    sections = _sections(plan, _results(plan, make_result))
    for section in sections.values():
        for field in ("hypothesis", "variable", "control", "expected"):
            assert section[field]
        assert section["observed"] and section["root_cause"], section["id"]
    checks = acceptance_checks(sections)
    assert checks["e2_ok"] and checks["e2_hf_generate_breaks"] == 3 and checks["e2_fullgraph_breaks"] == 0
    assert checks["e3_ok"] and checks["e3_recompiles_by_distinct_length"] == [[1, 0], [2, 1], [3, 2], [4, 3]]
    assert checks["e4_ok"] and checks["e4_planner_graphs"] <= 2
    assert checks["e5_ok"] and checks["e5_long_on_ms"] < checks["e5_long_off_ms"]
    assert checks["e6_ok"] and not checks["e6_empty_cells"]
    json.dumps(sections)                                  # report.json must serialise


def test_e6_p95_is_the_last_step_against_the_baseline_on_the_same_requests(plan, make_result):
    import numpy as np
    results = _results(plan, make_result)
    checks = acceptance_checks(_sections(plan, results))

    def p95(options):                      # the median over warm passes of each pass's p95
        passes = results[plan.spec(options).key].steady_passes
        return float(np.median([p.latency_p95_ms for p in passes]))
    expected = p95(E6_STEPS[0][1]) / p95(E6_STEPS[-1][1])
    assert checks["e6_p95_times_better"] == pytest.approx(expected)


def test_verdicts_come_from_the_numbers(plan, make_result) -> None:
    sections = _sections(plan, _results(plan, make_result))
    e1 = sections["E1"]["configs"]
    assert e1["default"]["vs_off"]["verdict"] == "faster"
    assert e1["default"]["vs_off"]["ratio"] == pytest.approx(0.5, rel=0.02)
    assert e1["reduce-overhead"]["vs_default"]["verdict"] == "within noise"
    e6 = sections["E6"]["configs"]
    assert [e6[name]["verdict"]["verdict"] for name, _ in E6_STEPS] == [
        "control", "keep", "no measurable gain", "no measurable gain", "keep",
        "no measurable gain", "no measurable gain", "no measurable gain"]
    assert "CUDA graphs" in " ".join(sections["E1"]["root_cause"])
    roofline = sections["roofline"]["configs"]
    assert roofline["roofline_ms_per_token"]["fp32"] == pytest.approx(0.04)
    tpot = roofline["compiled fullgraph"]["ms_per_token"]["median"]
    assert roofline["compiled fullgraph"]["ratio_to_roofline"] == pytest.approx(tpot / 0.04)


def test_an_unstable_compile_step_says_which_guards_failed(plan, make_result) -> None:
    results = _results(plan, make_result)
    key = plan.spec(dict(E6_STEPS)["+compile"]).key
    reason = "decode_step: tensor 'past' size mismatch at index 2. expected 9, actual 10"
    results[key] = replace(results[key], recompiles=8, recompile_limit_hits=1,
                           recompile_reasons=(reason,))
    e6 = _sections(plan, results)["E6"]
    assert e6["configs"]["+compile"]["verdict"]["verdict"] == "unstable"
    cause = next(line for line in e6["root_cause"] if "unstable" in line)
    assert "8 recompiles" in cause and reason in cause
    stable = _sections(plan, _results(plan, make_result))["E6"]["root_cause"]
    assert not any("unstable" in line for line in stable)


def test_quick_plan_computes_pow2_and_stops_e6_at_graph_break_removal(plan, make_result):
    quick = replace(plan, quick=True)
    assert "pow2" not in EXPERIMENTS["E4"].runs(quick) and "pow2" not in EXPERIMENTS["E4"].runs(plan)
    assert "+int8" not in EXPERIMENTS["E6"].runs(quick)
    sections = _sections(quick, _results(quick, make_result))
    pow2 = sections["E4"]["configs"]["pow2"]
    assert pow2["served"] is False and pow2["compiled_graphs"] == 3       # 32, 64, 128
    assert pow2["padding_waste_pct"] == pytest.approx(100 * (32 + 64 + 64 + 128 - 205) / 288)
    assert sections["E4"]["notes"] == [COMPUTED_NOTE]
    assert sections["E6"]["notes"][0] == EXPERIMENTS["E6"].left_out(quick)[0]
    assert any(n.startswith("token agreement:") for n in sections["E6"]["notes"])
    assert [row[0] for row in sections["E6"]["table"]["rows"]][-1] == "+graph-break removal"
    checks = acceptance_checks(sections)
    assert checks["e4_ok"] and checks["e6_ok"]


def test_a_failed_run_leaves_na_cells_not_a_crash(plan, make_result) -> None:
    results = _results(plan, make_result)
    bf16 = plan.spec(E6_STEPS[5][1])
    results[bf16.key] = FailedRun(bf16.key, "precision=bf16", "RuntimeError: boom", "")
    sections = _sections(plan, results)
    row = next(r for r in sections["E6"]["table"]["rows"] if r[0] == "+bf16")
    assert "run failed: RuntimeError: boom" in row
    assert all(str(cell).strip() for cell in row)
    checks = acceptance_checks(sections)           # every cell filled, yet a run failed
    assert not checks["e6_empty_cells"] and checks["e6_failed_runs"] == ["+bf16"]
    assert not checks["e6_ok"]


def test_checks_fail_on_results_built_to_fail(plan, make_result) -> None:
    checks = acceptance_checks(_sections(plan, _results(plan, make_result, fail=True)))
    assert checks["e2_fullgraph_breaks"] == 3 and not checks["e2_ok"]
    assert checks["e3_recompiles_by_distinct_length"][-1] == [4, 0] and not checks["e3_ok"]
    assert checks["e4_planner_graphs"] > 2 and not checks["e4_ok"]
    assert checks["e5_long_on_ms"] > checks["e5_long_off_ms"] and not checks["e5_ok"]
    assert checks["e6_failed_runs"] == ["+bf16"] and not checks["e6_ok"]


def test_e1_break_even_is_compile_seconds_over_the_time_each_request_saves(plan, make_result):
    sections = _sections(plan, _results(plan, make_result))
    default = sections["E1"]["configs"]["default"]
    # recomputed from the fake runs: 2 compiles of 1.5 s; every request makes 5 tokens, so
    # the saving per request is the difference of the mean warm latencies (202 vs 101 ms)
    assert default["break_even_requests"] == math.ceil(3.0 * 1000 / (202.0 - 101.0))
    row = next(r for r in sections["E1"]["table"]["rows"] if r[0] == "compile=default")
    assert row[-1] == f"{default['break_even_requests']} requests"
    assert sections["E1"]["table"]["columns"][-1] == "break-even"


def test_e1_break_even_is_never_when_compiled_is_slower(plan, make_result) -> None:
    results = _results(plan, make_result)
    slow = make_result(REFERENCE, pass_latencies=[[300.0] * 4, [300.0] * 4],
                       compiles=[("encode", "compile", "r0@warm-up")],
                       edges=plan.planner_edges, edges_name=plan.planner_name)
    results[plan.spec(REFERENCE).key] = slow
    section = _sections(plan, results)["E1"]
    assert section["configs"]["default"]["break_even_requests"] == "never"
    assert "never (not faster)" in next(r for r in section["table"]["rows"]
                                        if r[0] == "compile=default")
    json.dumps(section)


def test_e1_break_even_and_verdict_are_one_judgement_when_within_noise(plan, make_result):
    """A compiled run faster by the medians but inside the eager run's noise: its break-even is
    no measured gain, everywhere E1 says it (the table, the observed line, the cause, the
    JSON): never "within noise" beside "break-even N requests", nor "repaid" beside "pure
    cost"."""
    results = _results(plan, make_result)
    noisy = make_result(REFERENCE, pass_latencies=[[150.0] * 4, [205.0] * 4],
                        compiles=[("encode", "compile", "r0@warm-up")],
                        edges=plan.planner_edges, edges_name=plan.planner_name)
    results[plan.spec(REFERENCE).key] = noisy
    section = _sections(plan, results)["E1"]
    default = section["configs"]["default"]
    assert default["vs_off"]["verdict"] == "within noise"
    assert default["break_even_requests"] == "no measured gain"
    row = next(r for r in section["table"]["rows"] if r[0] == "compile=default")
    assert row[-1] == "none (not measurably faster)"
    (line,) = [o for o in section["observed"] if o.startswith("compile=default:")]
    assert "within noise" in line and "repaid after" not in line
    assert "the compile is not repaid (compiled is not measurably faster)" in line
    assert any("pure cost" in c for c in section["root_cause"])


def test_markdown_has_every_section_and_github_tables(plan, make_result) -> None:
    sections = _sections(plan, _results(plan, make_result))
    report = {"settings": {"model": "t5-tiny", "trace": "chat", "requests": 4, "repeats": 2,
                           "quick": True, "seed": 0, "compile_backend": "inductor"},
              "environment": {"device": "cpu", "cpu_count": 2, "load_average_start": [3.0],
                              "load_average_end": [3.5]},
              "plan": {"requests": [{"input_length": 20, "output_length": 8}],
                       "planner_edges": [35, 90], "pow2_edges": [32, 64]},
              "experiments": sections, "left_out": ["E7 …"],
              "checks": acceptance_checks(sections), "wall_s": 12.0,
              "files": {"torch_trace": "torch_trace/"}}
    text = render_markdown(report)
    for name in ("E1 — Compile modes", "E2 — Graph breaks", "E3 — Dynamic shapes",
                 "E4 — Bucketing", "E5 — KV cache", "E6 — Combined", "roofline — Roofline",
                 "observer — Observer cost"):
        assert f"## {name}" in text
    assert text.count("**Hypothesis:**") == 8 and "**Root cause**" in text
    assert "| step | config | compile |" in text and "|---|---|" in text
    assert "the machine was busy" in text
    assert "tlparse" in text
    for line in text.splitlines():
        if line.startswith("| "):
            assert line.endswith(" |")


def test_roofline_holds_each_precision_against_its_own_bytes(plan, make_result) -> None:
    plan = replace(plan, quick=False)                  # the full study: every lever, every precision
    env = {"device": "cpu", "roofline": {
        "step_bytes": {"decoder_layers": 600_000, "cross_kv_skipped": 50_000, "lm_head": 200_000,
                       "total": 800_000},
        "step_bytes_by_precision": {"fp32": 800_000, "bf16": 400_000, "int8": 230_000},
        "matmul_chain_ms": {"fp32": 0.05, "bf16": "not measured (RuntimeError: no kernel)",
                            "int8": 0.015},
        "bandwidth": {"read_gb_s": 20.0}, "matmul_gflops": 100.0}}
    results = _results(plan, make_result)
    section = _sections(plan, results, env)["roofline"]
    precisions = section["configs"]["precisions"]
    assert set(precisions) == {"fp32", "bf16", "int8"}
    for precision, nbytes in env["roofline"]["step_bytes_by_precision"].items():
        roof_ms = nbytes / 20e9 * 1e3
        row = precisions[precision]
        assert row["roofline_ms"] == pytest.approx(roof_ms)
        candidates = [section["configs"][f"{precision}{lever}"]["ms_per_token"]["median"]
                      for lever in LEVERS]
        assert row["compiled_ms"] == pytest.approx(min(candidates))
        assert row["ratio"] == pytest.approx(min(candidates) / roof_ms)
    whats = tuple(lever.what for lever in LEVERS.values() if lever is not None)
    effects = [line for line in section["root_cause"] if line.startswith(whats)]
    assert len(effects) == len(LEVERS) - 1            # one line per lever, from the runs
    for line in effects:                              # the fakes run every lever equally fast
        assert all(f"{p} within noise" in line for p in ("fp32", "bf16", "int8")), line
    # The gap split in two where the matmuls alone were measured: kernels, and the rest.
    assert precisions["fp32"]["matmul_chain_ms"] == 0.05 and "matmul_chain_ms" not in precisions["bf16"]
    split = [line for line in section["root_cause"] if line.startswith("fp32: the step's matmuls")]
    rest_ms = precisions["fp32"]["compiled_ms"] - 0.05
    assert len(split) == 1 and f"takes {fmt_ms(rest_ms)} more" in split[0]
    assert not any(line.startswith("bf16: the step's matmuls") for line in section["root_cause"])
    json.dumps(section)


def test_a_step_faster_than_its_roofline_is_called_no_measurement(plan, make_result) -> None:
    env = {"device": "cpu", "roofline": {
        "step_bytes": {"decoder_layers": 600_000, "cross_kv_skipped": 50_000, "lm_head": 200_000,
                       "total": 800_000},
        "step_bytes_by_precision": {"fp32": 800_000, "bf16": 400_000, "int8": 230_000},
        "bandwidth": {"read_gb_s": 0.0001}, "matmul_gflops": 100.0}}   # under-measured
    section = _sections(plan, _results(plan, make_result), env)["roofline"]
    assert all(row["ratio"] < 1 for row in section["configs"]["precisions"].values())
    assert any(text.startswith("Not a measurement: fp32, bf16, int8 ran faster")
               for text in section["observed"])
    quiet = _sections(plan, _results(plan, make_result))["roofline"]
    assert not any(text.startswith("Not a measurement") for text in quiet["observed"])


def test_a_runs_compile_seconds_carry_dynamos_split_into_the_report(make_result) -> None:
    """The run's split is its segment's (stats.compile_phases over its compile events), kept
    in the section's figures and named by its largest share in the observed text."""
    from probe.bench.experiments.base import compiled_text
    from probe.runs.results import section_figures

    compiles = [("encode", "compile", "r0@warm-up"), ("encode", "recompile", "r1@warm-up")]
    split = make_result(pass_latencies=[[50.0, 60.0]], compiles=compiles, phases=(1.2, 0.1, 0.2))
    phases = split.compile_phases
    assert (phases.tracing_s, phases.aot_s, phases.inductor_s) == pytest.approx((2.4, 0.2, 0.4))
    assert compiled_text(split) == "2 compiles (2 graphs) in 3.00 s, 80% tracing"
    assert section_figures(split)["compile_phases"] == {
        "tracing_s": pytest.approx(2.4), "aot_s": pytest.approx(0.2),
        "inductor_s": pytest.approx(0.4), "cache_load_s": 0.0}
    unsplit = make_result(pass_latencies=[[50.0, 60.0]], compiles=compiles)
    assert unsplit.compile_phases is None
    assert compiled_text(unsplit) == "2 compiles (2 graphs) in 3.00 s"
    assert json.loads(json.dumps(section_figures(unsplit)))["compile_phases"] is None


def test_the_full_grid_serves_the_fullest_bucket_and_the_baselines_the_whole_list(
        plan) -> None:
    from probe.bench.experiments.roofline import grid_note, grid_requests
    from workloads.buckets import bucket_for

    full = replace(plan, quick=False)
    specs = EXPERIMENTS["roofline"].runs(full)
    by_bucket: dict[int, int] = {}
    for request in full.requests:
        padded = bucket_for(request.input_length, full.planner_edges)
        by_bucket[padded] = by_bucket.get(padded, 0) + 1
    fullest = max(by_bucket.values())
    grid = [spec for role, spec in specs.items() if role not in ("compiled fullgraph", "hf eager")]
    assert len(grid) == 3 * len(LEVERS)
    for spec in grid:
        padded = {bucket_for(r.input_length, spec.edges) for r in spec.requests}
        assert len(padded) == 1 and len(spec.requests) == fullest < len(full.requests)
        assert spec.requests_name == f"bucket-{padded.pop()}"
        assert [r for r in full.requests if r in spec.requests] == list(spec.requests)
    assert specs["compiled fullgraph"].requests == full.requests == specs["hf eager"].requests
    assert len({spec.key for spec in specs.values()}) == len(specs)   # none shared by mistake
    assert f"{fullest} of the {len(full.requests)}" in grid_note(full)[0]
    assert grid_requests(replace(plan, quick=True)) == (plan.requests, "replayed")


def test_quick_roofline_holds_the_shared_fp32_step_and_hf_eager_against_the_roofline(
        plan, make_result) -> None:
    full, quick = replace(plan, quick=False), replace(plan, quick=True)
    assert len(EXPERIMENTS["roofline"].runs(full)) == 2 + 3 * len(LEVERS)
    specs = EXPERIMENTS["roofline"].runs(quick)
    assert set(specs) == {"compiled fullgraph", "hf eager", "fp32"}
    assert specs["fp32"] == specs["compiled fullgraph"]           # one run, read twice
    section = _sections(quick, _results(quick, make_result))["roofline"]
    assert set(section["configs"]["precisions"]) == {"fp32"}
    assert section["configs"]["precisions"]["fp32"]["config"] == "fp32"
    whats = tuple(lever.what for lever in LEVERS.values() if lever is not None)
    assert not [line for line in section["root_cause"] if line.startswith(whats)]
    rows = section["table"]["rows"]
    assert not any("not run" in str(row) for row in rows)
    # every precision's memory roofline is still computed from its bytes, with no run
    assert {row[0] for row in rows if row[1] == "memory roofline"} == {"fp32", "bf16", "int8"}
