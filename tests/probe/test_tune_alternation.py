"""tune measures each change alternated with the config it would replace, rerun beside it, and
judges the change against that rerun: a load spike under an earlier step cannot make a change
look kept. A fake replay stands in for the engine (its latency set by the options and the
rate), so the order of the runs, the files and the figures can be checked exactly."""

from __future__ import annotations

import threading
from dataclasses import replace

from probe.analysis.slo import goodput
from probe.contract.objective import parse_slo
from probe.contract.options import OptConfig
from probe.runs.runs import RunContext
from probe.session_store.snapshot import (
    read_document,
    session_data,
)
from probe.tune.candidates import Candidate
from probe.tune.evaluate import Job, evaluate
from probe.tune.search import Measured, run_tune, verdict
from tests.probe.fake_replay import fake_replay_at
from tests.probe.test_tune_search import measured

SLO = parse_slo("latency=1s")
CONTEXT = RunContext(model="t5-tiny", device="cpu", loaded=None, max_input=512, repeats=2,
                     compile_backend="eager", slo=SLO, slo_target=0.9)


def fake_replay(order: list[OptConfig]):
    """Each request takes base × rate ms, base 400 without the KV cache and 100 with it: the
    uncached config meets the 1 s bound up to 2.5 req/s, the cached one up to 10."""
    return fake_replay_at(
        lambda options, rate: (100.0 if options.kv_cache == "on" else 400.0) * rate,
        order.append)


def run(job: Job, tmp_path, monkeypatch) -> tuple[Measured, list[OptConfig]]:
    order: list[OptConfig] = []
    monkeypatch.setattr("probe.tune.evaluate.replay_at", fake_replay(order))
    result = evaluate(job, CONTEXT, None, runs_dir=tmp_path, named_dir=tmp_path,
                      stop=threading.Event(), say=lambda text: None)
    return result, order


def figure_from_files(sessions) -> list[float]:
    values = []
    for path in sessions:
        data = session_data(read_document(path))
        values.append(goodput(data.records, data.slo).goodput_rps)
    return values


def test_a_change_at_a_rate_runs_abba_with_its_control_and_each_keeps_its_own_sessions(
        tmp_path, monkeypatch):
    off, on = OptConfig(kv_cache="off"), OptConfig(kv_cache="on")
    job = Job(on, "kv_cache=on", 1, 4, 4, "t", 5.0, control=off)
    result, order = run(job, tmp_path, monkeypatch)
    assert order == [off, on, on, off, off, on, on, off]
    assert result.control is not None and result.control.control is None
    assert len(result.sessions) == len(result.control.sessions) == 4
    assert not set(result.sessions) & set(result.control.sessions)
    # each side's figure is its own sessions', recomputed from their records
    for side in (result, result.control):
        values = sorted(figure_from_files(side.sessions))
        assert side.figure.low == values[0] and side.figure.high == values[-1]
    assert result.slo_attainment == 1.0 and result.control.slo_attainment == 0.0
    kept, why = verdict(result, measured([9.0, 9.1]), capacity=False)
    assert kept and "rerun alternated" in why          # judged against its control, not 9.0
    # the step's time is both sides': the budget estimates steps from it
    assert result.seconds >= 0 and "control" in result.as_dict()


def test_capacity_searches_of_a_change_and_its_control_take_turns(tmp_path, monkeypatch):
    off, on = OptConfig(kv_cache="off"), OptConfig(kv_cache="on")
    job = Job(on, "kv_cache=on", 2, 3, 2, "t", None, start_rps=2.0, control=off)
    result, order = run(job, tmp_path, monkeypatch)
    assert result.control is not None and result.capacity and result.control.capacity
    runs, control_runs = len(result.capacity["runs"]), len(result.control.capacity["runs"])
    turns = 2 * min(runs, control_runs)
    assert order[:turns] == [off, on] * (turns // 2)      # the control runs first, then turns
    assert len(order) == runs + control_runs
    low, high = result.capacity["bracket_rps"]
    assert low <= 10.0 and (high is None or high > 10.0)
    low, high = result.control.capacity["bracket_rps"]
    assert low <= 2.5 and (high is None or high > 2.5)
    assert verdict(result, result.control, capacity=True)[0]


def test_a_load_spike_under_the_baseline_does_not_keep_a_change_that_does_nothing():
    """The machine is ten times slower while the baseline runs, calm afterwards, and the change
    does nothing. Against the baseline's own figure it would look 10× better; against the
    current config rerun beside it, it is within noise and dropped."""
    spiking = [True]

    def evaluate_with(options: OptConfig, label: str, control: OptConfig | None) -> Measured:
        factor = 0.1 if spiking[0] else 1.0
        spiking[0] = False
        result = measured([factor * 0.99, factor * 1.01])
        if control is None:
            return result
        return replace(result, control=measured([factor * 0.98, factor * 1.02]))
    state = run_tune(OptConfig(), evaluate_with, lambda segment: [Candidate("bucketing", "on")],
                     capacity=False, max_drift=0.05, budget_s=1e9)
    baseline, change = state.steps
    assert change.measured is not None and baseline.measured is not None
    assert not change.kept and "within noise" in change.why and "rerun" in change.why
    assert state.final == OptConfig()
    # the same figures judged against the stale baseline would have kept it
    assert verdict(replace(change.measured, control=None), baseline.measured,
                   capacity=False)[0]


def test_each_side_is_served_with_its_own_bucket_count_slots_and_window(tmp_path,
                                                                         monkeypatch):
    """--search quick|exhaustive: the candidate and its control each reach the engine with
    their own settings: the planner's edges for the bucket count, max_batch, the window."""
    import json

    from probe.engine.workload_setup import prepare_workload
    from probe.tune.tuned_settings import TunedSettings

    served: list[tuple[str, tuple[int, ...], int, float | None]] = []

    def replay_at(context, options, workload, *, max_batch, batch_window_ms, **rest):
        served.append((options.batching, workload.bucket_edges, max_batch, batch_window_ms))
        return fake_replay_at(lambda o, rate: 100.0)(context, options, workload, **rest)
    monkeypatch.setattr("probe.tune.evaluate.replay_at", replay_at)
    path = tmp_path / "ladder.jsonl"
    path.write_text("".join(json.dumps({"timestamp": i * 100, "input_length": n,
                                        "output_length": 4}) + "\n"
                            for i, n in enumerate([8, 8, 16, 16, 32, 64, 64, 128])))
    workload = prepare_workload(str(path))
    candidate = OptConfig(bucketing="on", batching="dynamic")
    job = Job(candidate, "c", 1, 2, 1, "t", 2.0, control=OptConfig(batching="continuous"),
              settings=TunedSettings(bucket_count=2, max_batch=4, batch_window_ms=10),
              control_settings=TunedSettings(max_batch=16))
    evaluate(job, CONTEXT, workload, runs_dir=tmp_path, named_dir=tmp_path,
             stop=threading.Event(), say=lambda text: None)
    mine = next(s for s in served if s[0] == "dynamic")
    theirs = next(s for s in served if s[0] == "continuous")
    # the planner's best 2 edges: 208 padded tokens (16: 240, 64: 240)
    assert mine[1] == (32, 128) and mine[2:] == (4, 10.0)
    assert theirs[1] == workload.bucket_edges and theirs[2:] == (16, 50.0)
