"""`tune` on SIGTERM/SIGHUP exits 128 + the signal with the steps done written, and `tune --ray`
measures one step's candidates at once (one Ray task per node slot) and decides them as the
one-change-at-a-time search does. A fake replay stands in for the engine: no compile."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sys
import time
from pathlib import Path

import pytest

from probe.contract.objective import parse_slo
from probe.contract.options import OptConfig
from probe.runs.cluster import SLOT, Cluster
from probe.runs.runs import RunContext
from probe.runs.spread import Spread
from probe.tune.candidates import SEED_ORDER, Candidate
from probe.tune.evaluate import Job
from probe.tune.search import Measured, run_tune
from tests.conftest import by_value
from tests.probe.fake_replay import fake_replay_at


def fake_replay(signal_on_call: int | None, signum: int, calls: list[int]):
    """replay_at without an engine: `requests` served records at 100 ms, the session saved;
    on call `signal_on_call` the process sends itself `signum` mid-run."""
    def on_call(options: OptConfig) -> None:
        calls.append(1)
        if len(calls) == signal_on_call:
            os.kill(os.getpid(), signum)
            time.sleep(0.2)                 # the handler runs in this (the main) thread
    return fake_replay_at(lambda options, rate: 100.0, on_call)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_a_stop_signal_exits_128_plus_it_and_keeps_the_steps_done(signum, tmp_path,
                                                                  monkeypatch, capfd):
    from infertop.cli import main
    calls: list[int] = []
    # the baseline's two runs finish; the first change's first run is cut by the signal
    monkeypatch.setattr("probe.tune.evaluate.replay_at", fake_replay(3, signum, calls))
    out = tmp_path / "tune"
    code = main(["tune", "--model", "t5-tiny", "--trace", "chat", "--device", "cpu",
                 "--slo", "latency=1s", "--rate", "2", "--requests", "3", "--repeats", "2",
                 "--threads", "1", "--out", str(out)])
    assert code == 128 + signum
    assert len(calls) == 3                                  # nothing ran after the signal
    document = json.loads((out / "tune.json").read_text())
    assert document["done"] is False and document["stopped"] == "interrupted"
    measured = [s for s in document["steps"] if s["measured"]]
    assert [s["change"] for s in measured] == ["baseline"]  # the cut run is not counted
    assert measured[0]["slo_attainment"] == 1.0
    assert "baseline" in (out / "tune.md").read_text()
    assert signal.Signals(signum).name in capfd.readouterr().err    # said from the handler


# -- tune --ray, through a local Ray instance with two slots ---------------------------------
PAIR = ("kv_cache=on", "compile=default")          # the first step: each waits for the other
BARRIER = "tune-barrier"                            # a folder under the HOME Ray's tasks see


def table_goodput(options: OptConfig) -> float:
    value = 3.0 if options.kv_cache == "on" else 1.0          # the planted fix
    value *= 1.5 if options.decode == "fullgraph" else 1.0    # a real gain
    value *= 0.5 if options.batching == "dynamic" else 1.0    # worse
    value *= 1.2 if options.batching == "continuous" else 1.0
    return value


def table_measured(options: OptConfig, control: OptConfig | None = None) -> Measured:
    value = table_goodput(options)
    figure = Spread.of([value * 0.99, value * 1.01])
    return Measured(figure, figure.median, 0.9, 100.0, 0.0, seconds=1.0,
                    control=None if control is None else table_measured(control))


def fake_job(job: Job, context: RunContext, trace: str, threads, named_dir: str):
    """A node's run without an engine. The first step's two candidates meet at a barrier (a
    file each, in the test's folder): it returns only if both ran at the same time."""
    from probe.tune.ray_pool import JobOutcome
    barrier = Path(os.environ["HOME"]) / BARRIER
    if job.label in PAIR:
        (barrier / job.label).touch()
        deadline = time.monotonic() + 120
        while not all((barrier / name).exists() for name in PAIR):
            if time.monotonic() > deadline:
                raise RuntimeError(f"{job.label}: its step's other candidate never ran beside it")
            time.sleep(0.05)
    name = f"{job.index:02d}_{job.label}.json"
    return JobOutcome(table_measured(job.options, job.control), ((name, b"{}"),), "node-a",
                      0.0)


@pytest.fixture
def ray_two_slots(local_ray):
    """The run's one Ray instance (two slots, tests/conftest.py), with a fresh barrier
    folder."""
    ray, home = local_ray
    by_value(ray, __name__)
    barrier = home / BARRIER
    barrier.mkdir()
    yield ray
    shutil.rmtree(barrier, ignore_errors=True)


def two_slot_steps(tmp_path, said: list[str], runner):
    """The local Ray instance as a two-slot cluster, its jobs run by `runner`."""
    import threading

    from probe.tune.ray_pool import RayPool
    context = RunContext(model="t5-tiny", device="cpu", loaded=None, max_input=512, repeats=2,
                         compile_backend="eager", slo=parse_slo("latency=1s"))
    cluster = Cluster("local", "cpu", {"num_cpus": 1, "resources": {SLOT: 1}}, 2, 1, "2.x")
    return RayPool(cluster, context, "chat", 1, tmp_path, threading.Event(), said.append,
                   runner=runner)


def seed_order(segment):
    return [Candidate(k, v) for k, v in SEED_ORDER]


@pytest.mark.timeout(300)
def test_tune_ray_runs_a_steps_candidates_at_once_and_decides_as_the_sequential_path(
        ray_two_slots, tmp_path):
    said: list[str] = []
    steps = two_slot_steps(tmp_path, said, fake_job)
    counter = iter(range(1, 100))

    def job(options, label, control):
        return Job(options, label, next(counter), 3, 2, "chat", 2.0, control=control)

    def many(jobs):
        return steps.measure([job(*each) for each in jobs])

    baseline = OptConfig(kv_cache="off")
    parallel = run_tune(baseline, lambda *each: many([each])[0], seed_order,
                        capacity=False, max_drift=0.05, budget_s=1e9, width=steps.width,
                        evaluate_many=many)
    sequential = run_tune(baseline, lambda o, label, control: table_measured(o, control),
                          seed_order, capacity=False, max_drift=0.05, budget_s=1e9)
    assert steps.width == 2
    assert any("2 candidates at once" in line and "kv_cache=on" in line for line in said)
    # the pair met at its barrier: both ran at once (else the task raised and was dropped)
    first = {s.change: s for s in parallel.steps[1:3]}
    assert set(first) == set(PAIR) and first["kv_cache=on"].kept
    assert first["compile=default"].measured.figure.median is not None
    # the same choice, the same keep/drop rule as one change at a time
    assert parallel.final == sequential.final == OptConfig(decode="fullgraph",
                                                           batching="continuous")
    decided = {s.change: s.kept for s in sequential.steps if s.measured}
    for step in parallel.steps:
        if step.measured and step.change in decided and step.kept:
            assert decided[step.change], step.change
    # every run's session came back into the runs folder
    assert len(list(tmp_path.glob("*.json"))) == sum(1 for s in parallel.steps if s.measured)


def test_tune_ray_without_ray_installed_is_one_line(tmp_path, monkeypatch, capsys):
    from infertop.cli import main
    monkeypatch.setitem(sys.modules, "ray", None)
    assert main(["tune", "--slo", "latency=1s", "--rate", "1", "--ray", "local",
                 "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip()
    assert "pip install 'infertop[ray]'" in err and "\n" not in err
    assert not (tmp_path / "o").exists()


# -- tune --search quick --ray: trials as Ray tasks, merged as they end ----------------------
TRIAL_PAIR = ("trial 1", "trial 2")                 # the first two trials: each waits for the other


def fake_trial_job(job: Job, context: RunContext, trace: str, threads, named_dir: str):
    """A node's trial without an engine; the first two trials meet at a barrier (both must
    be in flight at once) and the second ends first."""
    from probe.tune.ray_pool import JobOutcome
    barrier = Path(os.environ["HOME"]) / BARRIER
    if job.label in TRIAL_PAIR:
        (barrier / job.label).touch()
        deadline = time.monotonic() + 120
        while not all((barrier / name).exists() for name in TRIAL_PAIR):
            if time.monotonic() > deadline:
                raise RuntimeError(f"{job.label}: the other trial never ran beside it")
            time.sleep(0.05)
        if job.label == "trial 1":
            time.sleep(1.0)
    name = f"{job.index:02d}_{job.label.replace(' ', '-')}.json"
    return JobOutcome(table_measured(job.options, job.control), ((name, b"{}"),), "node-a",
                      0.0)


@pytest.mark.timeout(300)
def test_tune_quick_on_ray_keeps_two_trials_in_flight_and_merges_each_as_it_ends(
        ray_two_slots, tmp_path):
    from dataclasses import replace

    from probe.tune.combo import QUICK, run_combo
    from probe.tune.space import dimensions
    from probe.tune.trials import DONE, Bounds
    said: list[str] = []
    steps = two_slot_steps(tmp_path, said, fake_trial_job)
    counter = iter(range(1, 100))

    def job_of(setup, label, control):
        return Job(setup.options, label, next(counter), 3, 2, "chat", 2.0,
                   control=control.options if control else None)

    ended: list[int] = []

    def on_trial(state):
        ended.extend(t.number for t in state.trials
                     if t.status == DONE and t.number not in ended)
    state = run_combo(OptConfig(kv_cache="off"), None, mode=QUICK,
                      dims=dimensions("cpu", ("kv_cache", "decode", "batching")), trials=4,
                      objectives=("goodput",), bounds=Bounds(), seeds=lambda *given: [],
                      pool=replace(steps, job_of=job_of), on_trial=on_trial)
    assert any("2 trials in flight on Ray" in line for line in said)
    assert [t.status for t in state.trials] == [DONE] * 5
    # trial 2 merged (and the next trial started on its slot) while trial 1 still ran
    assert ended[:2] == [0, 2] and ended.index(1) > 2
    for trial in state.trials[1:]:
        truth = table_goodput(trial.options) / table_goodput(OptConfig(kv_cache="off"))
        assert trial.vs_default["goodput"].value == pytest.approx(truth)
    assert len(list(tmp_path.glob("*.json"))) == 5     # each trial's session came back
