"""One run through a real engine on t5-tiny, eager or with dynamo's eager backend (seconds)."""

import json
from dataclasses import replace

import pytest

from probe.bench.experiments.e5_kv_cache import output_classes, requests_by_class
from probe.bench.experiments.observer import OBSERVER
from probe.bench.profile import PROFILE
from probe.bench.progress import Progress, estimate_s
from probe.contract.options import OptConfig
from probe.engine.model.loading import load_model
from probe.runs.plan import BenchRequest, Plan, RunSpec, make_plan, select_requests
from probe.runs.results import RunResult
from probe.runs.runs import RunContext, RunHooks, execute, execute_group
from workloads.trace import load_trace

REQUESTS = (BenchRequest("a", 12, 4), BenchRequest("b", 20, 3), BenchRequest("c", 12, 5))


@pytest.fixture(scope="module")
def tiny():
    return load_model("t5-tiny")


def _context(tiny, tmp_path, repeats=2) -> RunContext:
    return RunContext(model="t5-tiny", device="cpu", loaded=tiny, max_input=512,
                      repeats=repeats, compile_backend="eager", out_dir=tmp_path,
                      trace_info={"name": "test"})


def test_an_eager_run_has_cold_warm_and_a_snapshot(tiny, tmp_path) -> None:
    seen = []
    spec = RunSpec(OptConfig(decode="fullgraph"), REQUESTS, "replayed")
    run = execute(spec, _context(tiny, tmp_path),
                  RunHooks(on_request=lambda phase, done, n: seen.append((phase, done, n))))
    assert isinstance(run, RunResult)
    result = run.as_dict()                   # report.json's keys, as they always were
    assert seen[0] == ("warm-up", 1, 3) and seen[-1] == ("pass 2/2", 3, 3)
    assert len(result["steady_passes"]) == 2 and result["steady"]["latency_p50_ms"]["n"] == 2
    assert result["cold_start_ms"] > 0 and result["compiles"] == 0 and result["failed"] == 0
    assert result["distinct_input_lengths"] == 2
    assert result["weight_bytes"] > 0 and result["kv_cache_peak_bytes"] > 0
    assert len(run.steady_records) == 6 and "steady_records" not in result
    json.dumps(result)
    snapshot = json.loads((tmp_path / result["snapshot"]).read_text())
    assert len(snapshot["requests"]) == 9               # warm-up + 2 passes of 3
    assert snapshot["settings"]["bench_run"] == spec.key


def test_tokens_kept_on_request_and_drift_measured_after_the_passes(tiny, tmp_path) -> None:
    from dataclasses import replace
    spec = RunSpec(OptConfig(decode="fullgraph"), REQUESTS, "replayed")
    result = execute(spec, replace(_context(tiny, tmp_path), keep_tokens=True), RunHooks())
    snapshot = json.loads((tmp_path / result.snapshot).read_text())
    assert all(len(r["tokens"]) == r["output_tokens"] for r in snapshot["requests"])
    drift = result.as_dict()["drift"]   # seqs 0 and 8 of 9 sampled; fp32 eager is its own reference
    assert drift["sampled_requests"] == len(snapshot["reference_tokens"]) == 2
    assert drift["token_agreement"] == 1.0


def test_eager_configs_interleave_on_one_engine(tiny, tmp_path) -> None:
    seen = []
    on = RunSpec(OptConfig(), REQUESTS[:2], "pair")
    off = RunSpec(OptConfig(kv_cache="off"), REQUESTS[:2], "pair")
    results = execute_group([on, off], _context(tiny, tmp_path, repeats=2),
                            RunHooks(on_request=lambda phase, done, n: seen.append(phase)))
    phases = list(dict.fromkeys(seen))
    assert phases == ["warm-up [baseline]", "warm-up [kv_cache=off]", "pass 1/2 [baseline]",
                      "pass 1/2 [kv_cache=off]", "pass 2/2 [kv_cache=off]", "pass 2/2 [baseline]"]
    assert results[on.key].group == results[off.key].group
    assert results[on.key].kv_cache_peak_bytes > 0 and results[off.key].kv_cache_peak_bytes == 0
    assert results[on.key].snapshot == results[off.key].snapshot
    snapshot = json.loads((tmp_path / results[on.key].snapshot).read_text())
    assert len(snapshot["configs"]) == 2 and len(snapshot["requests"]) == 12
    assert len({r["seq"] for r in snapshot["requests"]}) == 12
    with pytest.raises(ValueError):
        execute_group([on, RunSpec(OptConfig(compile="default"), REQUESTS, "pair")],
                      _context(tiny, tmp_path), RunHooks())


def test_an_interleaved_pair_stops_together_after_a_whole_round(tiny, tmp_path) -> None:
    from probe.runs.stopping import CAP, FIXED, GAVE_UP, SETTLED
    requests = tuple(BenchRequest(f"p{i}", 8 + i, 2) for i in range(20))     # BURN_IN: 20
    on = RunSpec(OptConfig(), requests, "pair")
    off = RunSpec(OptConfig(kv_cache="off"), requests, "pair")
    context = replace(_context(tiny, tmp_path, repeats=3), stopping="sequential")
    results = execute_group([on, off], context, RunHooks())
    stops = [results[spec.key].stopping for spec in (on, off)]
    assert stops[0].served == stops[1].served and stops[0].served % len(requests) == 0
    assert stops[0].reason == stops[1].reason in (SETTLED, GAVE_UP, CAP)
    assert [p.partner for p in stops[0].against] == [off.key]
    assert [p.partner for p in stops[1].against] == [on.key]
    if stops[0].served < stops[0].cap:
        assert all(p.decided or p.futile(stops[0].cap) for s in stops for p in s.against)
    fixed = execute_group([on, off], replace(context, stopping=FIXED), RunHooks())
    assert all(r.stopping.reason == "fixed size" and r.stopping.served == 60
               for r in fixed.values())


def test_a_compiled_run_counts_recompiles_per_new_length(tiny, tmp_path) -> None:
    spec = RunSpec(OptConfig(compile="default", decode="fullgraph"), REQUESTS, "replayed")
    result = execute(spec, _context(tiny, tmp_path, repeats=1), RunHooks())
    # two distinct lengths: the encoder, prefill and decode steps compile once each, then
    # recompile once each for the second length; the third request reuses the first graphs
    assert [p.recompiles for p in result.curve] == [0, 3, 3]
    assert result.max_graphs_per_function == 2
    assert result.steady_compiles == 0 and result.graph_breaks == 0


def test_observer_and_profile_extras(tiny, tmp_path) -> None:
    spec = RunSpec(OptConfig(decode="fullgraph"), REQUESTS[:2], "replayed")
    result = execute(spec, _context(tiny, tmp_path, repeats=1), RunHooks(),
                     extras=frozenset({OBSERVER, PROFILE}))
    observer = result.as_dict()["observer"]
    assert observer["order"] == ["on", "off", "off", "on", "on", "off"]
    assert 0 < observer["bookkeeping_us_per_request"] < 10_000
    assert 0 < observer["bookkeeping_fraction"] < 1
    assert observer["probes_on_tokens_per_s"]["n"] == 3 and observer["verdict"]
    trace = json.loads((tmp_path / result.profile.chrome_trace).read_text())
    assert trace["traceEvents"]
    top_ops = (tmp_path / result.profile.top_ops).read_text()
    assert "Self CPU" in top_ops and not list((tmp_path / "profile").glob(".*.tmp"))


def test_plan_is_a_fixed_sample_with_in_sample_buckets() -> None:
    trace = load_trace("chat")
    first, again = select_requests(trace, 6, 0), select_requests(trace, 6, 0)
    assert first == again and first != select_requests(trace, 6, 1)
    plan = make_plan(model="t5-tiny", trace_name="chat", device="cpu", quick=True, requests=6,
                     bucket_count=3, seed=0)
    lengths = [r.input_length for r in plan.requests]
    assert len(plan.planner_edges) == 3 and max(plan.planner_edges) == max(lengths)
    assert max(plan.pow2_edges) >= max(lengths)
    classes = output_classes(trace.output_lengths())
    assert classes["short"] < classes["medium"] < classes["long"]
    assert {r.output_length for r in requests_by_class(plan)["long"]} == {classes["long"]}


def test_progress_eta_and_lines(capsys) -> None:
    import io
    specs = [RunSpec(OptConfig(), REQUESTS, "replayed"),
             RunSpec(OptConfig(compile="default", decode="fullgraph"), REQUESTS, "replayed")]
    estimates = [estimate_s(s, model="t5-tiny", passes=3) for s in specs]
    assert estimates[1] > estimates[0]                  # compiles cost more than tokens
    stream = io.StringIO()
    progress = Progress(estimates, stream=stream)
    progress.start_run(0, "E1", "baseline")
    progress.request_done("warm-up", 1, 3, 0.1)
    progress.request_done("warm-up", 2, 3, 0.2)          # same phase: no new line off a tty
    progress.finish_run()
    lines = stream.getvalue().splitlines()
    assert len(lines) == 2 and "E1 [1/2] baseline" in lines[1] and "left" in lines[1]
    assert 0 < progress.done_fraction() < 1
    assert isinstance(Plan, type)


def test_a_run_stops_mid_pass_once_its_rule_settles(tiny, tmp_path) -> None:
    from probe.runs.stopping import StopRule
    requests = tuple(BenchRequest(f"s{i}", 8 + i, 2) for i in range(8))
    spec = RunSpec(OptConfig(decode="fullgraph"), requests, "replayed")
    far_slower = {r.id: 1e7 for r in requests}          # a partner this run is surely faster than
    rule = StopRule({"slow": far_slower}, min_requests=len(requests))
    run = execute(spec, _context(tiny, tmp_path, repeats=4), RunHooks(), rule=rule)
    assert isinstance(run, RunResult) and run.stopping is not None
    # the interval starts after 20 warm requests: two whole passes and 4 of the third
    assert (run.stopping.served, run.stopping.cap, run.stopping.reason) == (20, 32, "settled")
    assert len(run.steady_passes) == 2 and len(run.steady_records) == 20
    assert run.stopping.against[0].verdict == "faster"
    assert run.as_dict()["stopping"]["text"] == "settled: faster vs slow"


def test_a_short_warm_up_serves_one_request_and_rehearses_the_rest(tiny, tmp_path) -> None:
    from dataclasses import replace
    seen = []
    spec = RunSpec(OptConfig(decode="fullgraph"), REQUESTS, "replayed")
    run = execute(spec, replace(_context(tiny, tmp_path), short_warmup=True),
                  RunHooks(on_request=lambda phase, done, n: seen.append((phase, done, n))))
    assert isinstance(run, RunResult) and run.warmup_rehearsed == 2
    assert seen[:2] == [("warm-up", 1, 1), ("warm-up", 3, 3)]
    result = run.as_dict()
    assert result["warmup"]["rehearsed"] == 2 and result["cold_start_ms"] > 0
    assert result["distinct_input_lengths"] == 2 and len(result["steady_passes"]) == 2
    snapshot = json.loads((tmp_path / result["snapshot"]).read_text())
    served = [r["id"] for r in snapshot["requests"]]
    assert len(served) == 7 and served[0] == "a@warm-up"     # the cold start, then 2 × 3
    assert not any("rehearsal" in i for i in served)


def test_a_short_warm_up_compiles_every_bucket_before_the_passes(tiny, tmp_path) -> None:
    from dataclasses import replace
    options = OptConfig(compile="default", decode="fullgraph", bucketing="on")
    spec = RunSpec(options, REQUESTS, "replayed", edges=(16, 32), edges_name="test")
    run = execute(spec, replace(_context(tiny, tmp_path, repeats=1), short_warmup=True),
                  RunHooks())
    assert isinstance(run, RunResult) and run.warmup_rehearsed == 2 and run.failed == 0
    # the cold start compiles the 16-token bucket; the rehearsal of b (20 tokens) the 32 one
    assert run.max_graphs_per_function == 2 and run.steady_compiles == 0


def test_a_short_warm_up_is_kept_for_what_compiles_as_outputs_grow() -> None:
    from probe.runs.runs import short_warmup_fits, warmup_share
    bucketed = dict(compile="default", decode="fullgraph", bucketing="on")
    fits = {label: short_warmup_fits(RunSpec(OptConfig(**options), REQUESTS, "r", edges=(16,)))
            for label, options in {
                "eager": {}, "bucketed static": bucketed,
                "no KV cache": {**bucketed, "kv_cache": "off"},
                "HF generate": {**bucketed, "decode": "hf-generate"},
                "no bucketing": {**bucketed, "bucketing": "off"}}.items()}
    assert fits == {"eager": True, "bucketed static": True, "no KV cache": False,
                    "HF generate": False, "no bucketing": False}
    spec = RunSpec(OptConfig(), REQUESTS, "r")          # outputs 4, 3, 5: 4 + 2 + 2 of 12
    assert warmup_share(spec, True) == 8 / 12 and warmup_share(spec, False) == 1.0


def test_the_calibration_runs_on_one_thread_and_gives_the_threads_back(monkeypatch) -> None:
    import torch

    from probe.runs.runs import calibrate_ms
    before = torch.get_num_threads()
    set_to: list[int] = []
    real = torch.set_num_threads
    monkeypatch.setattr(torch, "set_num_threads",
                        lambda n: (set_to.append(n), real(n))[1])
    assert calibrate_ms(repeats=1) > 0
    assert set_to == [1, before] and torch.get_num_threads() == before
