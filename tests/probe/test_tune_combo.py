"""`tune --search quick|exhaustive` on a fake evaluate: the space (compile-only options never
apart from compile), the ratios to the default carried through each control (a machine that
drifts between trials cancels), the constraints, a config that cannot run, resume, the Pareto
frontier and its knee, and the files. No engine."""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import threading
from dataclasses import replace
from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from infertop.endings import ending
from probe.common.errors import BadConfig, BadInput
from probe.contract.figures import EnergyStats
from probe.contract.objective import parse_slo
from probe.contract.options import COMPILE_ONLY, OPTION_BY_KEY, OptConfig
from probe.report_charts.canvas import Caption
from probe.report_charts.tune_charts import TunePoint, frontier_chart, knee_text
from probe.runs.spread import Spread
from probe.tune.candidates import Candidate
from probe.tune.combo import EXHAUSTIVE, QUICK, greedy_path, run_combo
from probe.tune.combo_report import (
    chart_points,
    combo_document,
    frontier_trials,
    write_combo,
)
from probe.tune.frontier import dominates, frontier, knee
from probe.tune.runner import _combo
from probe.tune.search import Measured
from probe.tune.space import dimensions, every_config
from probe.tune.trials import DONE, FAILED, INTERRUPTED, Bounds, Ratio, Trial, amortized
from tests.bench.html_page import Page

SMALL = ("compile", "bucketing", "wrapper", "guards", "quant")


def true_goodput(options: OptConfig) -> float:
    """Compile pays only with bucketing (no recompiles); wrapper helps only compiled."""
    value = 1.0
    if options.compiled and options.bucketing == "on":
        value *= 2.0
    elif options.compiled:
        value *= 0.7
    value *= 1.2 if options.wrapper == "cpp" else 1.0
    value *= 0.9 if options.guards == "lean" else 1.0
    return value


def true_joules(options: OptConfig) -> float:
    """Joules per good token on a machine at full speed: not goodput's order (the cpp
    wrapper buys goodput with joules; lean guards save them)."""
    value = 0.5
    if options.compiled and options.bucketing == "on":
        value *= 0.8
    value *= 1.1 if options.wrapper == "cpp" else 1.0
    value *= 0.7 if options.guards == "lean" else 1.0
    return value


def fake_measured(options: OptConfig, machine: float, kv_bytes: int = 1000,
                  compile_s: float = 0.0, energy: str | None = None) -> Measured:
    """`energy`: None, each config's joules (a slower machine spends more a token); else
    why the counter is unavailable."""
    value = true_goodput(options) * machine
    stats = (EnergyStats(unavailable=energy) if energy else
             EnergyStats(source="fake counter", j_per_good_token=true_joules(options) / machine))
    segment = SimpleNamespace(tokens_per_s=10 * value, kv_cache_peak_bytes=kv_bytes,
                              compile_s=compile_s, latency_ms=SimpleNamespace(p50=100 / value),
                              energy=stats)
    return Measured(Spread.of([value * 0.99, value * 1.01]), value, 1.0, 200 / value, None,
                    segment=segment)


def fake(refuse=lambda options: None, stop_at: int | None = None,
         stop: threading.Event | None = None, kv=lambda options: 1000,
         compile_s=lambda options: 0.0, energy: str | None = None):
    """evaluate(setup, label, control): the machine slows 3% a call, alike for both sides of
    one call (they alternate); `refuse` raises for configs the engine refuses. `calls`: the
    options of each call (these spaces vary no setting)."""
    calls: list[OptConfig] = []

    def evaluate(setup, label, control_setup):
        options = setup.options
        control = control_setup.options if control_setup else None
        calls.append(options)
        reason = refuse(options)
        if reason:
            raise BadConfig(reason)
        if stop_at is not None and len(calls) == stop_at and stop is not None:
            stop.set()
        machine = 0.97 ** len(calls)
        result = fake_measured(options, machine, kv(options), compile_s(options), energy)
        if control is None:
            return result
        return replace(result, control=fake_measured(control, machine, kv(control),
                                                     compile_s(control), energy))
    return evaluate, calls


def no_seeds(default, segment):
    return []


NO_BOUNDS = Bounds()


def search(evaluate, *, mode=QUICK, trials=6, bounds=NO_BOUNDS, previous=(), stop=None,
           baseline=OptConfig(), keys=SMALL, seeds=no_seeds, objectives=("goodput",)):
    dims = dimensions("cpu", keys)
    return run_combo(baseline, evaluate, mode=mode, dims=dims, trials=trials,
                     objectives=objectives, bounds=bounds, seeds=seeds, previous=previous,
                     stop=stop)


def compile_only_apart_from_compile(options: OptConfig) -> bool:
    return not options.compiled and any(getattr(options, k) != v for k, v in COMPILE_ONLY.items())


# --- the space ---------------------------------------------------------------------------

@settings(max_examples=40, deadline=None)
@given(st.lists(st.sampled_from([k for k in OPTION_BY_KEY if k not in ("prewarm",
                                                                       "compile_cache")]),
                min_size=1, max_size=4, unique=True))
def test_the_space_never_holds_a_compile_only_option_apart_from_compile(keys):
    dims = dimensions("cpu", tuple(keys))
    configs = [s.options for s in itertools.islice(every_config(OptConfig(), dims), 500)]
    assert configs and len(set(configs)) == len(configs)
    for options in configs:
        assert not compile_only_apart_from_compile(options), options.label()
        assert options.kv_layout == "static" or options.batching == "continuous"
        assert options.tf32 == "off"                    # a CPU serves tf32 off


def test_the_exhaustive_space_is_every_distinct_served_config():
    """Against an independent count: the full product of the values, each config normalized
    as the engine serves it (compile-only options at their default without compile)."""
    dims = dimensions("cpu", SMALL)
    served = set()
    for values in itertools.product(*(OPTION_BY_KEY[k].values for k in SMALL)):
        chosen = dict(zip(SMALL, values))
        if chosen["compile"] == "off":
            chosen.update({k: COMPILE_ONLY[k] for k in chosen if k in COMPILE_ONLY})
        served.add(OptConfig(**chosen))
    assert {s.options for s in every_config(OptConfig(), dims)} == served
    assert len(served) == 2 * 3 + 3 * 2 * 2 * 2 * 3    # off: bucketing × quant; on: all


def test_the_cold_start_options_and_tf32_off_a_gpu_are_not_searched():
    keys = {d.key for d in dimensions("cpu")}
    assert not keys & {"prewarm", "compile_cache", "tf32"}
    assert "tf32" in {d.key for d in dimensions("cuda:0")}


def test_the_greedy_path_is_cumulative_and_stays_in_the_space():
    dims = dimensions("cpu", SMALL)
    path = greedy_path(OptConfig(), [Candidate("compile", "default"),
                                     Candidate("bucketing", "on", "recompiles"),
                                     Candidate("kv_cache", "off"),       # not in the space
                                     Candidate("wrapper", "cpp")], dims)
    assert [o.options.label() for o, _ in path] == ["compile=default",
                                            "compile=default bucketing=on",
                                            "compile=default bucketing=on wrapper=cpp"]
    assert "recompiles" in path[1][1]


# --- the search --------------------------------------------------------------------------

@pytest.mark.parametrize("mode", [QUICK, EXHAUSTIVE])
def test_each_trial_is_measured_once_against_the_best_so_far(mode):
    evaluate, calls = fake()
    state = search(evaluate, mode=mode, trials=10)
    assert len(calls) == len(set(calls))               # never a config twice
    assert calls[0] == OptConfig()                     # the default first, alone
    default = state.trials[0]
    assert default.control is None and default.source == "default"
    for trial in state.trials[1:]:
        assert trial.status == DONE
        assert not compile_only_apart_from_compile(trial.options)
        # the ratio to the default, carried through each control while the machine slowed
        # 3% a call, equals the true one (an independent computation from the fake's table)
        truth = true_goodput(trial.options) / true_goodput(OptConfig())
        assert trial.vs_default["goodput"].value == pytest.approx(truth)
        assert trial.vs_default["goodput"].low <= truth <= trial.vs_default["goodput"].high
        earlier = [t for t in state.trials if t.number < trial.number and t.feasible]
        best_before = max(earlier, key=lambda t: (t.vs_default["goodput"].value, -t.number))
        assert trial.control == best_before.options
    if mode == EXHAUSTIVE:
        assert len(state.trials) == len(set(every_config(OptConfig(),
                                                         dimensions("cpu", SMALL))))
    else:
        assert len(state.trials) == 1 + 10


def test_exhaustive_finds_the_pair_that_pays_only_together():
    evaluate, _ = fake()
    state = search(evaluate, mode=EXHAUSTIVE, keys=("compile", "bucketing"))
    document = combo_document(state, search={"mode": EXHAUSTIVE, "objectives": ["goodput"]},
                              slo_text="latency=1s", settings={}, done=True)
    assert document["final"]["options"]["bucketing"] == "on"
    assert document["final"]["options"]["compile"] != "off"
    assert document["final"]["better_than_default"]["ratio"] == pytest.approx(2.0)


def test_a_config_the_engine_refuses_is_recorded_and_never_retried():
    evaluate, calls = fake(refuse=lambda o: "int4 needs torchao" if o.quant == "int4" else None)
    state = search(evaluate, mode=EXHAUSTIVE, keys=("compile", "quant"))
    failed = [t for t in state.trials if t.status == FAILED]
    assert failed and all(t.options.quant == "int4" for t in failed)
    assert all("int4 needs torchao" in t.reason for t in failed)
    assert len(calls) == len(set(calls))
    quick, quick_calls = fake(refuse=lambda o: "no" if o.quant == "int4" else None)
    state = search(quick, trials=12, keys=("compile", "quant"))
    assert len(quick_calls) == len(set(quick_calls))


def test_constraints_memory_and_amortization_decide_what_counts():
    evaluate, _ = fake(kv=lambda o: 5000 if o.wrapper == "cpp" else 1000,
                       compile_s=lambda o: 100.0 if o.guards == "lean" else 0.0)
    state = search(evaluate, mode=EXHAUSTIVE, keys=("compile", "bucketing", "wrapper",
                                                    "guards"),
                   bounds=Bounds(max_memory=2000, amortize=10))
    for trial in state.trials:
        memory = trial.constraints["memory"]
        assert memory.met == (trial.kv_peak_bytes <= 2000)
        assert memory.met == (trial.options.wrapper != "cpp")
        paid = trial.constraints["amortized"]
        if trial.options.guards == "lean":
            assert not paid.met        # 100 s against at most 10 × 50 ms
    document = combo_document(state, search={"mode": EXHAUSTIVE, "objectives": ["goodput"]},
                              slo_text="latency=1s", settings={}, done=True)
    final = document["final"]["options"]
    assert final["wrapper"] == "python" and final["guards"] == "full"
    assert all(t["feasible"] for t in document["frontier"]
               for t in [next(x for x in document["trials"] if x["number"] == t["number"])])


@settings(max_examples=50, deadline=None)
@given(compile_s=st.floats(0, 1000), ratio=st.floats(0.1, 2.0), base_ms=st.floats(1, 1000),
       n=st.integers(1, 10_000))
def test_amortization_is_compile_seconds_against_n_requests_saving(compile_s, ratio, base_ms,
                                                                   n):
    default = Trial(0, OptConfig(), DONE, latency_p50_ms=base_ms)
    trial = Trial(1, OptConfig(compile="default"), DONE, compile_s=compile_s,
                  vs_default={"latency_p50": Ratio(ratio, ratio, ratio)})
    saving_s = base_ms / 1000 - base_ms * ratio / 1000
    assert amortized(trial, n, default).met == (compile_s == 0 or
                                                (saving_s > 0 and compile_s <= n * saving_s))


def test_the_drift_bound_needs_a_measured_drift_for_a_drifting_change():
    evaluate, _ = fake()
    state = search(evaluate, mode=EXHAUSTIVE, keys=("quant",), bounds=Bounds(max_drift=0.05))
    for trial in state.trials:
        assert trial.constraints["drift"].met == (trial.options.quant == "off")


# --- resume ------------------------------------------------------------------------------

@settings(max_examples=8, deadline=None)
@given(st.integers(0, 6))
def test_resume_after_n_finished_trials_runs_only_the_rest(finished):
    evaluate, _ = fake()
    whole = search(evaluate, trials=6)
    recorded = [Trial.from_dict(json.loads(json.dumps(t.as_dict())))
                for t in whole.trials[:1 + finished]]
    again, calls = fake()
    resumed = search(again, trials=6, previous=recorded)
    assert len(calls) == 6 - finished
    assert not set(calls) & {t.options for t in recorded}
    assert [t.number for t in resumed.trials] == list(range(7))


def test_a_trial_cut_short_is_left_unfinished_and_rerun_once_on_resume(tmp_path):
    stop = threading.Event()
    evaluate, calls = fake(stop_at=3, stop=stop)
    state = search(evaluate, trials=6, stop=stop)
    assert state.stopped == "interrupted"
    cut = state.trials[-1]
    assert cut.status == INTERRUPTED and cut.options == calls[2]
    write_combo(tmp_path, state, search={"mode": QUICK, "objectives": ["goodput"]},
                slo_text="latency=1s", settings=settings_for_report(), done=False)
    saved = json.loads((tmp_path / "tune.json").read_text())
    previous = [Trial.from_dict(t) for t in saved["trials"]]
    again, rerun = fake()
    resumed = search(again, trials=6, previous=previous)
    assert rerun[0] == cut.options and rerun.count(cut.options) == 1
    assert all(t.status == DONE for t in resumed.trials)
    assert len(resumed.trials) == 7


# --- the frontier and the knee -----------------------------------------------------------

points_strategy = st.lists(st.tuples(st.floats(0, 10), st.floats(0, 10)), min_size=1,
                           max_size=30)


@given(points_strategy)
def test_the_frontier_is_exactly_the_undominated_points(points):
    front = frontier(points)
    for i in front:
        assert not any(dominates(q, points[i]) for q in points)
    for i, p in enumerate(points):
        if i not in front:
            assert (any(dominates(q, p) for q in points)
                    or any(points[j] == p for j in front))
    assert front == sorted(front, key=lambda i: (-points[i][0], points[i][1]))


@given(points_strategy)
def test_the_knee_is_on_the_frontier(points):
    front = frontier(points)
    assert knee(points, front) in front


def test_the_knee_is_the_bend():
    # goodput up, p95 up: from (1, 1) a big gain for little p95, then little for a lot
    points = [(1.0, 1.0), (1.9, 1.1), (2.0, 3.0), (0.5, 2.0)]
    front = frontier(points)
    assert front == [2, 1, 0]
    assert knee(points, front) == 1


def settings_for_report() -> dict:
    return {"model": "t5-tiny", "trace": "azure", "requests": 3, "repeats": 2,
            "command": "infertop tune …"}


def test_the_files_show_every_trial_the_frontier_and_the_gain(tmp_path):
    evaluate, _ = fake()
    state = search(evaluate, mode=EXHAUSTIVE, keys=("compile", "bucketing"),
                   bounds=Bounds(max_memory=10_000))
    write_combo(tmp_path, state, search={"mode": EXHAUSTIVE, "objectives": ["goodput"]},
                slo_text=parse_slo("latency=1s").text(), settings=settings_for_report(),
                done=True)
    document = json.loads((tmp_path / "tune.json").read_text())
    assert len(document["trials"]) == len(state.trials)
    assert document["default_options"] == OptConfig().as_dict()
    front, bend = frontier_trials(state.trials)
    assert [t["number"] for t in document["frontier"]] == [t.number for t in front]
    assert document["knee"]["number"] == bend.number
    gain = document["final"]["better_than_default"]
    low, high = gain["interval"]
    assert low <= gain["ratio"] <= high
    text = (tmp_path / "tune.md").read_text()
    assert f"{(gain['ratio'] - 1) * 100:+.0f}%" in text
    assert "met" in text and "Knee" in text
    # report.html, as a browser parses it: one title, the trials a table, a row per trial
    page = Page((tmp_path / "report.html").read_text())
    assert len(page.all("h1")) == 1 and "```" not in page.all("body")[0][2]
    assert [e[2] for e in page.all("table")] == [page.all("table")[0][2]]    # the trials, alone
    header = [e[2] for e in page.all("th")]
    assert header[:3] == ["#", "config", "status"] and header[-1] == "why / source"
    cells = [e[2] for e in page.all("td")]
    assert len(page.all("tr")) == len(state.trials) + 1
    assert cells[::len(header)] == [str(t.number) for t in state.trials]
    assert cells[1::len(header)] == [t.setup.label() for t in state.trials]


# --- energy ------------------------------------------------------------------------------

ENERGY_KEYS = ("compile", "bucketing", "wrapper", "guards")


def test_objective_energy_chooses_the_fewest_joules_per_good_token():
    """Against the fake's own table: every trial's ratio to the default, carried through its
    control while the machine slowed, is the true one; the chosen config is the feasible one
    of fewest true joules, which is not the one of most goodput."""
    evaluate, _ = fake()
    state = search(evaluate, mode=EXHAUSTIVE, keys=ENERGY_KEYS, objectives=("energy",))
    for trial in state.trials:
        truth = true_joules(trial.options) / true_joules(OptConfig())
        assert trial.vs_default["energy"].value == pytest.approx(truth)
        assert trial.j_per_good_token is not None and trial.energy_unavailable is None
    document = combo_document(state, search={"mode": EXHAUSTIVE, "objectives": ["energy"]},
                              slo_text="latency=1s", settings={}, done=True)
    fewest = min((t.options for t in state.trials), key=true_joules)
    most = max((t.options for t in state.trials), key=true_goodput)
    assert fewest != most
    assert document["final"]["options"] == fewest.as_dict()
    assert document["final"]["objective_vs_default"]["ratio"] == pytest.approx(
        true_joules(fewest) / true_joules(OptConfig()))


@pytest.mark.parametrize("bound", [0.3, 0.45, 0.6])
def test_max_joules_per_token_bounds_each_trials_own_figure(bound):
    evaluate, _ = fake()
    state = search(evaluate, mode=EXHAUSTIVE, keys=ENERGY_KEYS,
                   bounds=Bounds(max_joules_per_token=bound))
    for trial in state.trials:
        energy = trial.constraints["energy"]
        assert energy.value == trial.j_per_good_token
        assert energy.met == (trial.j_per_good_token <= bound)
    document = combo_document(state, search={"mode": EXHAUSTIVE, "objectives": ["goodput"]},
                              slo_text="latency=1s", settings={}, done=True)
    if document["final"] is not None:
        chosen = next(t for t in state.trials if t.number == document["final"]["trial"])
        assert chosen.j_per_good_token <= bound


@pytest.mark.parametrize("flags", [{"objectives": ("energy",)},
                                   {"bounds": Bounds(max_joules_per_token=1.0)}])
def test_energy_unavailable_stops_after_the_default_naming_why(tmp_path, flags):
    evaluate, calls = fake(energy="no RAPL counter readable on this host")
    state = search(evaluate, trials=6, **flags)
    assert calls == [OptConfig()]                      # the default only
    assert "no RAPL counter readable on this host" in state.refused
    write_combo(tmp_path, state, search={"mode": QUICK,
                                         "objectives": list(flags.get("objectives",
                                                                      ("goodput",)))},
                slo_text="latency=1s", settings=settings_for_report(), done=False)
    saved = json.loads((tmp_path / "tune.json").read_text())
    assert [t["source"] for t in saved["trials"]] == ["default"]
    assert saved["trials"][0]["energy_unavailable"] == "no RAPL counter readable on this host"
    assert "no RAPL counter" in (tmp_path / "tune.md").read_text()
    # --resume meets the same default and stops again without measuring anything
    again, rerun = fake(energy="no RAPL counter readable on this host")
    resumed = search(again, trials=6, previous=[Trial.from_dict(t) for t in saved["trials"]],
                     **flags)
    assert rerun == [] and resumed.refused == state.refused


def test_energy_unavailable_does_not_stop_a_search_that_does_not_ask_for_it():
    evaluate, calls = fake(energy="no RAPL counter readable on this host")
    state = search(evaluate, trials=3)
    assert not state.refused and len(calls) == 4


def test_the_command_ends_in_one_line_exit_2_with_the_default_kept(tmp_path, capsys):
    args = argparse.Namespace(search=QUICK, objective=("energy",), trials=4, find_capacity=False,
                              slo_target=0.9, max_memory=None, max_drift=0.05, amortize=None,
                              max_joules_per_token=None, slo=parse_slo("latency=1s"),
                              budget=30.0)
    evaluate, calls = fake(energy="no RAPL counter readable on this host")
    with pytest.raises(BadInput) as raised:
        _combo(args, OptConfig(), dimensions("cpu", SMALL), [], evaluate, threading.Event(),
               tmp_path, {"settings": settings_for_report()})
    assert ending(raised.value) == 2
    said = capsys.readouterr().err.strip().splitlines()[-1]
    assert said.startswith("infertop: error: tune: --objective energy")
    assert "no RAPL counter readable on this host" in said
    assert calls == [OptConfig()]
    saved = json.loads((tmp_path / "tune.json").read_text())
    assert len(saved["trials"]) == 1 and saved["trials"][0]["status"] == DONE


# --- the frontier chart ------------------------------------------------------------------

def test_the_frontier_chart_is_written_beside_tune_md_and_names_its_points(tmp_path):
    """On recorded trials (tune.json read back): the SVG exists, tune.md links it, and it
    names the knee (its label), the default and every frontier point; the points it plotted
    are tune.json's own ratios."""
    evaluate, _ = fake(kv=lambda o: 5000 if o.wrapper == "cpp" else 1000)
    state = search(evaluate, mode=EXHAUSTIVE, keys=("compile", "bucketing", "wrapper"),
                   bounds=Bounds(max_memory=2000))
    recorded = [Trial.from_dict(json.loads(json.dumps(t.as_dict()))) for t in state.trials]
    state = replace(state, trials=recorded)
    context = dict(search={"mode": EXHAUSTIVE, "objectives": ["goodput"]},
                   slo_text="latency=1s", settings=settings_for_report())
    write_combo(tmp_path, state, done=True, **context)
    saved = json.loads((tmp_path / "tune.json").read_text())
    assert saved["frontier_chart"] == {"file": "tune_frontier.svg"}
    svg = (tmp_path / "tune_frontier.svg").read_text()
    assert "](tune_frontier.svg)" in (tmp_path / "tune.md").read_text()
    page = (tmp_path / "report.html").read_text()     # one page: the chart inline
    assert 'id="knee"' in page and '<img' not in page
    bend = saved["knee"]
    assert knee_text(TunePoint(bend["number"], bend["label"], 1, 1, True)) in svg
    assert "default (trial 0)" in svg
    for point in saved["frontier"]:
        assert f"#{point['number']}" in svg
    assert 'id="knee"' in svg and 'id="frontier"' in svg
    document = combo_document(state, done=True, **context)
    chart = frontier_chart(chart_points(state, document), Caption("cpu", "t5-tiny", "azure",
                                                                  "now"))
    plotted = {p["number"]: (p["goodput"], p["p95"], p["feasible"])
               for p in chart.series["points"]}
    assert plotted == {t["number"]: (t["vs_default"]["goodput"]["ratio"],
                                     t["vs_default"]["p95"]["ratio"], t["feasible"])
                       for t in saved["trials"]}
    assert sorted(chart.series["frontier"]) == sorted(p["number"] for p in saved["frontier"])
    assert chart.series["knee"] == bend["number"] and chart.series["default"] == 0
    missed = [n for n, (_, _, ok) in plotted.items() if not ok]
    assert missed and not set(missed) & set(chart.series["frontier"])


def test_without_a_measured_trial_no_chart_is_drawn_and_tune_md_says_why(tmp_path):
    evaluate, _ = fake(refuse=lambda o: "the engine refuses it")
    state = search(evaluate, trials=2)
    write_combo(tmp_path, state, done=True, search={"mode": QUICK, "objectives": ["goodput"]},
                slo_text="latency=1s", settings=settings_for_report())
    assert not (tmp_path / "tune_frontier.svg").exists()
    assert "Frontier chart not drawn: no trial measured" in (tmp_path / "tune.md").read_text()


def test_without_matplotlib_tune_md_names_the_extra(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)        # import matplotlib fails
    evaluate, _ = fake()
    state = search(evaluate, trials=2)
    write_combo(tmp_path, state, done=True, search={"mode": QUICK, "objectives": ["goodput"]},
                slo_text="latency=1s", settings=settings_for_report())
    assert not (tmp_path / "tune_frontier.svg").exists()
    reason = json.loads((tmp_path / "tune.json").read_text())["frontier_chart"]["unavailable"]
    assert "infertop[plots]" in reason
    assert f"Frontier chart not drawn: {reason}" in (tmp_path / "tune.md").read_text()
