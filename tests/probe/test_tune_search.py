"""The tune loop on a fake evaluate: one change at a time in the seed's order (reordered by the
baseline's data), kept only beyond the noise, drift-bounded, budget- and stop-aware; its files
are written after every step. No engine."""

from __future__ import annotations

import json
import threading
from dataclasses import replace

import pytest

from probe.contract.objective import parse_slo
from probe.contract.options import OptConfig
from probe.runs.spread import Spread
from probe.tune.candidates import SEED_ORDER, Candidate, applied, opt_line, ordered
from probe.tune.report import write_tune
from probe.tune.search import Measured, run_tune, verdict


def measured(values, drift=None, seconds=1.0) -> Measured:
    figure = Spread.of(values)
    return Measured(figure, figure.median, 0.9, 100.0, drift, seconds=seconds)


def fake(goodput_of):
    """evaluate(options, label, control) → the goodput `goodput_of(options)` gives, two repeats
    ±1%, with the control's beside it."""
    calls = []

    def evaluate(options: OptConfig, label: str, control: OptConfig | None) -> Measured:
        calls.append(label)
        value, drift = goodput_of(options)
        result = measured([value * 0.99, value * 1.01], drift)
        if control is None:
            return result
        base, _ = goodput_of(control)
        return replace(result, control=measured([base * 0.99, base * 1.01]))
    return evaluate, calls


def seed_order(segment):
    return [Candidate(k, v) for k, v in SEED_ORDER]


def goodput_table(options: OptConfig) -> tuple[float, float | None]:
    value = 1.0
    value *= 3.0 if options.kv_cache == "on" else 1.0        # the planted fix
    value *= 1.5 if options.decode == "fullgraph" else 1.0   # a real gain
    value *= 1.002 if options.bucketing == "on" else 1.0     # within the noise
    value *= 2.0 if options.precision == "bf16" else 1.0     # fast but drifts
    value *= 0.5 if options.batching == "dynamic" else 1.0   # worse
    return value, (0.2 if options.precision == "bf16" else 0.0)


def test_a_planted_bad_baseline_is_fixed_and_only_real_gains_are_kept():
    evaluate, calls = fake(goodput_table)
    baseline = OptConfig(kv_cache="off")
    state = run_tune(baseline, evaluate, seed_order, capacity=False, max_drift=0.05,
                     budget_s=1e9)
    kept = [s.change for s in state.steps if s.kept]
    assert kept == ["baseline", "kv_cache=on", "decode=fullgraph"]
    assert state.final == OptConfig(decode="fullgraph")
    why = {s.change: s.why for s in state.steps}
    assert "within noise" in why["bucketing=on"]
    assert "drift" in why["precision=bf16"] and "--max-drift" in why["precision=bf16"]
    assert "less goodput" in why["batching=dynamic"]
    assert "needs compile" in why["wrapper=cpp"]             # compile was not kept
    assert calls[0] == "baseline" and len(calls) == sum(s.measured is not None
                                                        for s in state.steps)


def test_the_budget_stops_the_search_after_the_first_change():
    evaluate, calls = fake(goodput_table)
    now = [0.0]

    def clock():
        now[0] += 100.0
        return now[0]
    state = run_tune(OptConfig(kv_cache="off"), evaluate, seed_order, capacity=False,
                     max_drift=0.05, budget_s=150.0, clock=clock)
    assert calls == ["baseline", "kv_cache=on"]          # the first change always runs
    assert state.stopped.startswith("budget") and state.final.kv_cache == "on"


def test_a_stop_keeps_the_steps_done_and_drops_the_run_it_cut():
    stop = threading.Event()
    evaluate, calls = fake(goodput_table)

    def stopping(options, label, control):
        if label == "decode=fullgraph":
            stop.set()
        return evaluate(options, label, control)
    state = run_tune(OptConfig(kv_cache="off"), stopping, seed_order, capacity=False,
                     max_drift=0.05, budget_s=1e9, stop=stop)
    assert [s.change for s in state.steps if s.measured] == ["baseline", "kv_cache=on",
                                                             "compile=default"]
    assert state.stopped == "interrupted" and state.final.decode == "hf-generate"


def test_one_repeat_needs_a_margin_and_a_zero_baseline_can_be_beaten():
    one = lambda v: measured([v])    # noqa: E731
    assert verdict(one(1.06), one(1.0), capacity=False)[0]
    assert not verdict(one(1.03), one(1.0), capacity=False)[0]
    assert verdict(measured([0.5, 0.6]), measured([0.0, 0.0]), capacity=False)[0]
    assert not verdict(measured([0.0, 0.0]), measured([0.0, 0.0]), capacity=False)[0]
    kept, why = verdict(measured([0.0, 0.0]), measured([1.0, 1.1]), capacity=False)
    assert not kept and "less than the current" in why
    # by capacity: a baseline that met the target at no rate is beaten by any capacity
    kept, why = verdict(measured([0.3, 0.35]), measured([]), capacity=True)
    assert kept and "no rate tried" in why


def test_the_baselines_data_moves_what_it_points_at_to_the_front():
    import dataclasses

    from probe.analysis.stats import segment_stats
    from tests.conftest import synthetic_record
    rows = [synthetic_record(f"r{i}", i, latency_ms=400.0, output_tokens=40) for i in range(6)]
    # a later token slower than the first one's whole service: the prefix is recomputed
    slow_steps = [dataclasses.replace(r, tpot_ms=r.ttft_ms * 2) for r in rows]
    first = ordered(segment_stats("c1", slow_steps, [], []))[0]
    assert first.text == "kv_cache=on" and "tpot" in first.hint
    # requests that mostly queue point at batching, which moves ahead of compile — but the
    # KV cache stays first
    queued = [dataclasses.replace(r, queue_ms=r.latency_ms * 0.8) for r in rows]
    texts = [c.text for c in ordered(segment_stats("c1", queued, [], []))]
    assert texts[:3] == ["kv_cache=on", "batching=dynamic", "batching=continuous"]
    assert [c.text for c in ordered(None)] == [f"{k}={v}" for k, v in SEED_ORDER]


def test_changes_that_cannot_apply_say_why():
    assert applied(OptConfig(), Candidate("kv_cache", "on"))[1] == "already kv_cache=on"
    assert "batching=continuous" in applied(OptConfig(), Candidate("kv_layout", "paged"))[1]
    options, _ = applied(OptConfig(compile="default"), Candidate("guards", "lean"))
    assert options == OptConfig(compile="default", guards="lean")
    assert opt_line(OptConfig(compile="default", decode="fullgraph")) == \
        "--opt compile=default --opt decode=fullgraph"
    assert opt_line(OptConfig()) == ""


def test_tune_json_has_the_keys_the_issue_fixes(tmp_path):
    evaluate, _ = fake(goodput_table)
    slo = parse_slo("ttft=1s,latency=8s")
    state = run_tune(OptConfig(kv_cache="off"), evaluate, seed_order, capacity=False,
                     max_drift=0.05, budget_s=1e9)
    write_tune(tmp_path, state, slo=slo, target=0.9, rate_rps=2.0, capacity=False,
               settings={"model": "m", "trace": "t", "requests": 4, "repeats": 2,
                         "budget_min": 1.0, "command": "infertop tune …"}, done=True)
    document = json.loads((tmp_path / "tune.json").read_text())
    assert document["slo"] == slo.as_dict() and document["rate_rps"] == 2.0
    for step in document["steps"]:
        assert {"options", "kept", "goodput_rps", "slo_attainment", "why"} <= set(step)
        assert isinstance(step["kept"], bool) and isinstance(step["options"], dict)
    assert document["final"]["options"] == OptConfig(decode="fullgraph").as_dict()
    assert document["final"]["opt_line"] == "--opt decode=fullgraph"
    markdown = (tmp_path / "tune.md").read_text()
    assert "--opt decode=fullgraph" in markdown and "kv_cache=on" in markdown


@pytest.mark.parametrize("argv, named", [
    (["tune", "--out", "o", "--rate", "1"], "--slo is required"),
    (["tune", "--out", "o", "--slo", "ttft=1s"], "one of the arguments --rate --find-capacity"),
    (["tune", "--out", "o", "--slo", "ttft=1q", "--rate", "1"], "argument --slo"),
    (["tune", "--out", "o", "--slo", "ttft=1s", "--rate", "1", "--opt", "kv_cache=maybe"],
     "kv_cache"),
    (["tune", "--resume", "o"], "--resume o: no tune.json"),
    (["tune", "--out", "o", "--slo", "ttft=1s", "--rate", "1", "--objective", "speed"],
     "argument --objective"),
    (["tune", "--out", "o", "--slo", "ttft=1s", "--rate", "1", "--objective", "energy"],
     "--objective and --max-joules-per-token are for --search quick|exhaustive"),
    (["tune", "--out", "o", "--slo", "ttft=1s", "--rate", "1", "--max-joules-per-token", "2"],
     "--objective and --max-joules-per-token are for --search quick|exhaustive"),
    (["tune", "--out", "o", "--slo", "ttft=1s", "--rate", "1", "--search", "quick",
      "--max-joules-per-token", "-1"], "argument --max-joules-per-token"),
    (["tune", "--out", "o", "--slo", "ttft=1s", "--rate", "1", "--search", "quick",
      "--space", "bucketing,bucket_count=0/4"], "--space bucket_count=0/4: expected whole"),
    (["tune", "--out", "o", "--slo", "ttft=1s", "--rate", "1", "--search", "exhaustive",
      "--space", "compile,max_batch"], "--space max_batch: acts only with batching="),
])
def test_bad_tune_input_is_one_line_and_exit_2(argv, named, capsys, tmp_path, monkeypatch):
    from infertop.cli import main
    monkeypatch.chdir(tmp_path)
    try:
        code = main(argv)
    except SystemExit as exc:
        code = exc.code
    assert code == 2
    err = capsys.readouterr().err.strip()
    assert named in err and "\n" not in err and not (tmp_path / "o").exists()


def test_prewarm_is_listed_but_not_run_since_every_run_is_warm():
    options, why = applied(OptConfig(compile="default"), Candidate("prewarm", "on"))
    assert options is None and "measured warm" in why


def test_a_step_that_would_pass_the_budget_is_not_started_and_says_so(tmp_path):
    """Eager steps take 10 s, compiled ones 60 s: once a compiled step has run, the next
    compiled change is estimated at 60 s, not at the 27 s mean of all steps, and is not started
    when that would pass the budget; the whole search stays within it."""
    now = [0.0]

    def evaluate(options: OptConfig, label: str, control: OptConfig | None) -> Measured:
        seconds = 60.0 if options.compiled else 10.0
        now[0] += seconds
        value = (3.0 if options.kv_cache == "on" else 1.0) * (2.0 if options.compiled else 1.0)
        return measured([value * 0.99, value * 1.01], 0.0, seconds=seconds)
    state = run_tune(OptConfig(kv_cache="off"), evaluate, seed_order, capacity=False,
                     max_drift=0.05, budget_s=110.0, clock=lambda: now[0])
    ran = [s.change for s in state.steps if s.measured]
    assert ran == ["baseline", "kv_cache=on", "compile=default"] and now[0] <= 110.0
    skipped = [s for s in state.steps if "for the budget" in s.why]
    assert skipped and skipped[0].change == "decode=fullgraph"
    assert "1.0 min" in skipped[0].why and state.stopped.startswith("budget")
    write_tune(tmp_path, state, slo=parse_slo("latency=1s"), target=0.9, rate_rps=1.0,
               capacity=False, settings={"model": "m", "trace": "t", "requests": 4,
                                         "repeats": 2, "budget_min": 110 / 60, "command": "…"},
               done=True)
    markdown = (tmp_path / "tune.md").read_text()
    assert "not started for the budget" in markdown and "Stopped early: budget" in markdown


def test_a_wide_step_keeps_the_best_retries_the_runner_up_and_defers_what_it_enables():
    """Two candidates a step: each judged against the current config as one change would be;
    of two that beat it the better is kept and the other is tried again on top of it; a change
    that needs one of its step's candidates (wrapper needs compile) waits for the next step."""
    batches: list[list[str]] = []

    def goodput_of(options: OptConfig) -> float:
        value = 2.0 if options.compiled else 1.0
        value *= 1.5 if options.decode == "fullgraph" else 1.0
        return value * (1.3 if options.wrapper == "cpp" else 1.0)

    def many(jobs):
        batches.append([label for _, label, _ in jobs])
        return [measured([goodput_of(o) * 0.99, goodput_of(o) * 1.01]) for o, _, _ in jobs]
    order = lambda segment: [Candidate("compile", "default"), Candidate("decode", "fullgraph"),  # noqa: E731
                             Candidate("wrapper", "cpp")]
    state = run_tune(OptConfig(), lambda o, label, c: many([(o, label, c)])[0], order,
                     capacity=False, max_drift=0.05, budget_s=1e9, width=2, evaluate_many=many)
    assert batches[1] == ["compile=default", "decode=fullgraph"]    # wrapper deferred
    assert batches[2] == ["decode=fullgraph", "wrapper=cpp"]        # both on top of compile
    first_decode = next(s for s in state.steps if s.change == "decode=fullgraph")
    assert not first_decode.kept and "tried again on top of it" in first_decode.why
    assert state.final == OptConfig(compile="default", decode="fullgraph", wrapper="cpp")
    assert not any("needs compile" in s.why for s in state.steps)


@pytest.mark.parametrize("attained, said", [(1.0, True), (0.95, False)])
def test_a_kept_config_that_meets_the_slo_for_every_request_says_the_rate_caps_goodput(
        attained, said, tmp_path):
    evaluate, _ = fake(goodput_table)

    def meeting(options, label, control):
        return replace(evaluate(options, label, control), slo_attainment=attained)
    state = run_tune(OptConfig(kv_cache="off"), meeting, seed_order, capacity=False,
                     max_drift=0.05, budget_s=1e9)
    write_tune(tmp_path, state, slo=parse_slo("latency=1s"), target=0.9, rate_rps=1.0,
               capacity=False, settings={"model": "m", "trace": "t", "requests": 4,
                                         "repeats": 2, "budget_min": 1.0, "command": "…"},
               done=True)
    markdown = (tmp_path / "tune.md").read_text()
    assert ("bounded by the offered rate" in markdown) is said
    assert ("with decode=fullgraph (attainment 100%)" in markdown) is said


# -- a signal keeps finished work --------------------------------------------------------------

def test_tune_never_counts_a_baseline_a_signal_cut_short():
    stop = threading.Event()
    seen = []

    def evaluate(options, label, control):
        stop.set()                       # the signal arrives while the baseline runs
        return object()

    state = run_tune(OptConfig(), evaluate, lambda segment: [], capacity=False, max_drift=0.05,
                     budget_s=60, stop=stop, on_step=lambda step, st: seen.append(step))
    assert state.stopped == "interrupted"
    assert [s.kept for s in state.steps] == [False] and state.steps[0].measured is None
    assert "not counted" in state.steps[0].why and seen
