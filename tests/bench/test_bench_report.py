"""Sections, verdicts, checks and report.md from synthetic run results."""

import json

import pytest

from probe.bench import experiments as ex
from probe.bench.experiments import EXPERIMENTS, E6_STEPS, REFERENCE, Plan
from probe.bench.report import render_markdown
from probe.bench.runner import acceptance_checks, collect_runs, parse_experiments
from probe.bench.runs import BenchRequest
from probe.errors import ConfigError
from probe.options import OptConfig

# the experiments served back to back (E7 replays open loop through probe/bench/batching.py)
STUDY = tuple(n for n in ex.ALL_EXPERIMENTS if n not in ex.OPEN_LOOP_EXPERIMENTS)
REQUESTS = tuple(BenchRequest(f"r{i}", n, 8) for i, n in enumerate((20, 35, 60, 90)))


@pytest.fixture
def plan() -> Plan:
    e5 = {name: tuple(BenchRequest(f"{r.id}-{name}", r.input_length, tokens) for r in REQUESTS[:2])
          for name, tokens in (("short", 4), ("medium", 16), ("long", 64))}
    return Plan(model="t5-tiny", trace="chat", device="cpu", quick=True, requests=REQUESTS,
                bucket_count=2, planner_edges=(35, 90), pow2_edges=(32, 64, 128),
                trace_input_lengths=(20, 35, 60, 90, 90), e5_requests=e5,
                compile_modes=("default", "reduce-overhead"))


def test_parse_experiments() -> None:
    names, notes = parse_experiments(None)
    assert names == ex.ALL_EXPERIMENTS and notes == []
    names, notes = parse_experiments("e4, E2,roofline,E7")
    assert names == ("E2", "E4", "E7", "roofline") and notes == []
    with pytest.raises(ConfigError, match="unknown experiment 'E9'"):
        parse_experiments("E9")


def test_shared_configs_run_once(plan) -> None:
    runs, units = collect_runs(plan, STUDY)
    assert sorted(k for unit in units for k in unit) == sorted(runs)   # each run once
    e5 = [unit for unit in units if len(unit) == 2]
    assert len(e5) == 3 and all("kv_cache=off" in unit[1] for unit in e5)
    reference = plan.spec(REFERENCE)
    users = runs[reference.key][2]
    assert {"E1", "E2", "E4", "E6", "roofline", "observer"} <= {e for e, _ in users}
    assert "observer" in runs[reference.key][1]            # extras merged onto the shared run
    unbucketed = plan.spec(OptConfig(compile="default", decode="fullgraph"), edges="none")
    assert {("E3", "off"), ("E4", "none")} <= set(runs[unbucketed.key][2])
    assert len({spec.key for spec, _, _ in runs.values()}) == len(runs)
    # one variable at a time: E4's planner and pow2 runs differ only in their edges
    planner, pow2 = EXPERIMENTS["E4"].runs(plan)["planner"], EXPERIMENTS["E4"].runs(plan)["pow2"]
    assert planner.options == pow2.options and planner.edges != pow2.edges


def _results(plan, make_result) -> dict[str, dict]:
    """Every run of the study, faked: compiled runs are 2× faster than eager ones."""
    results = {}
    for name in STUDY:
        for role, spec in EXPERIMENTS[name].runs(plan).items():
            if spec.key in results:
                continue
            o = spec.options
            base = 100.0 if o.compiled and o.decode == "fullgraph" else 200.0
            if o.kv_cache == "off":
                base *= 1 + spec.max_new_tokens / 16      # grows with the output length
            compiles = []
            if o.compiled:
                compiles = [("encode", "compile", "r0@warm-up"), ("decode_step", "compile", "r0@warm-up")]
                if o.bucketing == "off" and o.dynamic == "off":
                    compiles += [("encode", "recompile", f"r{i}@warm-up") for i in (1, 2, 3)]
            breaks = ([("Unsupported Tensor.item() call", "generation/utils.py:396", 3)]
                      if o.compiled and o.decode == "hf-generate" else [])
            padded = None
            if o.bucketing == "on":
                from workloads.buckets import bucket_for
                padded = [bucket_for(r.input_length, spec.edges) for r in spec.requests]
            result = make_result(
                o, pass_latencies=[[base] * len(spec.requests), [base * 1.02] * len(spec.requests)],
                inputs=[r.input_length for r in spec.requests], padded=padded, compiles=compiles,
                breaks=breaks, kv_bytes=4096 if o.kv_cache == "on" else 0,
                edges=spec.edges, edges_name=spec.edges_name, requests_name=spec.requests_name)
            result["weight_bytes"] = 800_000 if o.precision == "fp32" else 400_000
            if o == REFERENCE:
                result["observer"] = {
                    "probes_on_tokens_per_s": {"median": 99.0, "low": 97.0, "high": 101.0, "n": 2},
                    "probes_off_tokens_per_s": {"median": 100.0, "low": 98.0, "high": 102.0, "n": 2},
                    "overhead_fraction": 0.01, "verdict": "within noise",
                    "comparison": "within noise (1.01× slower by the medians)",
                    "order": ["on", "off", "off", "on"]}
            results[spec.key] = result
    return results


def _sections(plan, results, env=None):
    env = env or {"device": "cpu", "roofline": {
        "step_bytes": {"decoder_layers": 600_000, "cross_kv_skipped": 50_000, "lm_head": 200_000,
                       "total": 800_000},
        "bandwidth": {"gemv_read_gb_s": 20.0}, "matmul_gflops": 100.0}}
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


def test_verdicts_come_from_the_numbers(plan, make_result) -> None:
    sections = _sections(plan, _results(plan, make_result))
    e1 = sections["E1"]["configs"]
    assert e1["default"]["vs_off"]["verdict"] == "faster"
    assert e1["default"]["vs_off"]["ratio"] == pytest.approx(0.5, rel=0.02)
    assert e1["reduce-overhead"]["vs_default"]["verdict"] == "within noise"
    e6 = sections["E6"]["configs"]
    assert [e6[name]["verdict"]["verdict"] for name, _ in E6_STEPS] == [
        "control", "no measurable gain", "keep", "no measurable gain", "keep",
        "no measurable gain", "no measurable gain"]
    assert "CUDA graphs" in " ".join(sections["E1"]["root_cause"])
    roofline = sections["roofline"]["configs"]
    assert roofline["roofline_ms_per_token"]["fp32"] == pytest.approx(0.04)
    tpot = roofline["compiled fullgraph"]["ms_per_token"]["median"]
    assert roofline["compiled fullgraph"]["ratio_to_roofline"] == pytest.approx(tpot / 0.04)


def test_quick_plan_computes_pow2_and_stops_e6_at_bf16(plan, make_result) -> None:
    from dataclasses import replace
    quick = replace(plan, serve_pow2=False, e6_int8=False, left_out=("E4: computed", "E6: no int8"))
    assert "pow2" not in EXPERIMENTS["E4"].runs(quick)
    assert "+int8" not in EXPERIMENTS["E6"].runs(quick)
    sections = _sections(quick, _results(quick, make_result))
    pow2 = sections["E4"]["configs"]["pow2"]
    assert pow2["served"] is False and pow2["compiled_graphs"] == 3       # 32, 64, 128
    assert pow2["padding_waste_pct"] == pytest.approx(100 * (32 + 64 + 64 + 128 - 205) / 288)
    assert sections["E4"]["notes"] == ["E4: computed"] and sections["E6"]["notes"][0] == "E6: no int8"
    assert any(n.startswith("token agreement:") for n in sections["E6"]["notes"])
    assert [row[0] for row in sections["E6"]["table"]["rows"]][-1] == "+bf16"
    checks = acceptance_checks(sections)
    assert checks["e4_ok"] and checks["e6_ok"]


def test_a_difference_inside_the_machines_drift_is_noise(plan, make_result) -> None:
    fast = make_result(pass_latencies=[[100.0], [101.0]])
    slow = make_result(pass_latencies=[[160.0], [161.0]])
    assert ex._vs(fast, slow)["verdict"] == "faster"
    fast["calibration_ms"], slow["calibration_ms"] = [10.0, 12.0], [11.0, 12.0]   # 1.2×: ignored
    assert ex._vs(fast, slow)["verdict"] == "faster"
    fast["calibration_ms"], slow["calibration_ms"] = [10.0, 10.5], [18.0, 12.0]   # 1.8× drift
    versus = ex._vs(fast, slow)
    assert versus["verdict"] == "within noise" and "1.80×" in versus["text"]
    fast["group"] = slow["group"] = "pair"            # interleaved on one engine: drift cancels
    assert ex._vs(fast, slow)["verdict"] == "faster"


def test_a_failed_run_leaves_na_cells_not_a_crash(plan, make_result) -> None:
    results = _results(plan, make_result)
    bf16 = plan.spec(E6_STEPS[5][1])
    results[bf16.key] = {"key": bf16.key, "error": "RuntimeError: boom"}
    sections = _sections(plan, results)
    row = next(r for r in sections["E6"]["table"]["rows"] if r[0] == "+bf16")
    assert "run failed: RuntimeError: boom" in row
    assert all(str(cell).strip() for cell in row)
    assert acceptance_checks(sections)["e6_ok"]


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
    env = {"device": "cpu", "roofline": {
        "step_bytes": {"decoder_layers": 600_000, "cross_kv_skipped": 50_000, "lm_head": 200_000,
                       "total": 800_000},
        "step_bytes_by_precision": {"fp32": 800_000, "bf16": 400_000, "int8": 230_000},
        "bandwidth": {"gemv_read_gb_s": 20.0}, "matmul_gflops": 100.0}}
    results = _results(plan, make_result)
    section = _sections(plan, results, env)["roofline"]
    precisions = section["configs"]["precisions"]
    assert set(precisions) == {"fp32", "bf16", "int8"}
    for precision, nbytes in env["roofline"]["step_bytes_by_precision"].items():
        roof_ms = nbytes / 20e9 * 1e3
        row = precisions[precision]
        assert row["roofline_ms"] == pytest.approx(roof_ms)
        candidates = [section["configs"][f"{precision}{lever}"]["ms_per_token"]["median"]
                      for lever in ("", " +freezing")]
        assert row["compiled_ms"] == pytest.approx(min(candidates))
        assert row["ratio"] == pytest.approx(min(candidates) / roof_ms)
    json.dumps(section)
