"""`bench --ray`: the cluster's slots, a task run in process, the progress line, node
differences, and — through a local Ray instance (2 CPUs) — lost workers, Ctrl-C and a small
study whose results equal a local run's in everything but timings."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from io import StringIO
from pathlib import Path

import pytest

from infertop.cli import main
from probe.bench.nodes import NodeInfo, Placement, nodes_markdown, nodes_summary
from probe.bench.progress import PRIOR_SHARE, ClusterProgress
from probe.bench.tasks import BenchTask, Measured, TaskOutcome, UnitWork, run_task
from probe.common.errors import BadInput
from probe.contract.options import OptConfig
from probe.runs.cluster import SLOT, Cluster, run_slot
from probe.runs.plan import BenchRequest, BenchSettings, RunSpec
from probe.runs.results import FailedRun, RunResult
from probe.runs.runs import RunContext
from tests.conftest import by_value

SPEC = RunSpec(OptConfig(decode="fullgraph"), (BenchRequest("a", 12, 3), BenchRequest("b", 20, 2)),
               "replayed")
CONTEXT = RunContext(model="t5-tiny", device="cpu", loaded=None, max_input=512, repeats=1,
                     compile_backend="eager", trace_info={"name": "test"})
# E4 on t5-tiny with dynamo's eager backend: two compiled runs, graphs and recompiles to compare
STUDY = ["bench", "--quick", "--experiments", "E4", "--requests", "2", "--repeats", "1",
         "--compile-backend", "eager", "--device", "cpu"]
TIMINGS = {"cold_start_ms", "cold_start_compile_stall_ms", "warmup", "steady", "steady_passes",
           "curve", "calibration_ms", "compile_s", "compile_phases", "run_wall_s", "node",
           "throughput_rps", "goodput_rps", "goodput_tokens_per_s", "slo_attainment",
           # how a run stopped depends on the executor (under Ray no partner finishes first),
           # and what the inductor cache gave it on what the folder held before
           "stopping", "cache"}


def task(id: str, estimate_s: float = 10.0) -> BenchTask:
    return BenchTask(id, 0, f"run {id}", estimate_s, CONTEXT, UnitWork((SPEC,)))


def node(name: str, device: str = "x86_64") -> NodeInfo:
    return NodeInfo(f"id-{name}", name, {"device_name": device, "cpu_count": 2, "torch": "2.x"})


# -- no Ray needed ---------------------------------------------------------------------------
def test_without_ray_the_flag_says_how_to_get_it(tmp_path, monkeypatch, capsys) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)       # import ray → ImportError
    assert main([*STUDY, "--out", str(tmp_path / "out"), "--ray", "local"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "pip install 'infertop[ray]'" in err[0]
    assert not (tmp_path / "out").exists()


def test_a_matrix_of_studies_runs_through_ray(tmp_path, capsys) -> None:
    assert main([*STUDY, "--model", "t5-tiny,t5-small", "--out", str(tmp_path / "out")]) == 2
    assert "--ray local" in capsys.readouterr().err
    settings = BenchSettings(model="t5-tiny,./ckpt/my-t5", trace="chat,batch", device="cpu",
                             out=Path("d"), experiments=("E2",))
    assert [str(c.out) for c in settings.cells()] == [
        "d/t5-tiny__chat", "d/t5-tiny__batch", "d/my-t5__chat", "d/my-t5__batch"]
    assert [c.out for c in BenchSettings(model="t5-tiny", trace="chat", device="cpu",
                                         out=Path("d"), experiments=()).cells()] == [Path("d")]
    with pytest.raises(BadInput, match="same name"):
        BenchSettings(model="t5-tiny", trace="a/x.jsonl,b/x.jsonl", device="cpu", out=Path("d"),
                      experiments=()).cells()


def test_a_matrix_is_planned_up_front_one_task_per_unit(tmp_path) -> None:
    from probe.bench.experiments.e5_kv_cache import requests_by_class
    from probe.bench.matrix import render_index
    from probe.bench.ray_executor import plan_tasks
    from probe.bench.study_setup import prepare_study
    from probe.bench.tasks import MachineWork, OpenLoopWork
    settings = BenchSettings(model="t5-tiny", trace="chat,batch", device="cpu", out=tmp_path,
                             experiments=("E4", "E5", "E8", "roofline"), quick=True, requests=3,
                             repeats=1, bucket_count=2)
    cells = settings.cells()
    studies = [prepare_study(cell, "cpu", None) for cell in cells]
    tasks = plan_tasks(cells, studies)
    assert len({t.id for t in tasks}) == len(tasks)
    assert [t.estimate_s for t in tasks] == sorted((t.estimate_s for t in tasks), reverse=True)
    machine = [t for t in tasks if isinstance(t.work, MachineWork)]
    assert len(machine) == 1 and machine[0].cell is None        # once per model, shared
    for index, study in enumerate(studies):
        mine = [t for t in tasks if t.cell == index]
        assert all(t.title.startswith(f"t5-tiny/{cells[index].trace} · ") for t in mine)
        units = [t.work for t in mine if isinstance(t.work, UnitWork)]
        assert len(units) == len(study.units)
        e5 = [u for u in units if u.specs[0].requests_name.startswith("E5-")]
        assert len(e5) == len(requests_by_class(study.plan)) >= 2   # one per output class
        assert all(len(u.specs) == 2 for u in e5)                     # on/off stay together
        assert [t.work.experiment for t in mine if isinstance(t.work, OpenLoopWork)] == ["E8"]
    text = render_index({"wall_s": 12.0, "executor": {"name": "ray"}, "nodes": {}, "studies": [
        {"model": "t5-tiny", "trace": "chat", "dir": "t5-tiny__chat", "runs": 3, "failed": ["x"],
         "checks": {"e4_ok": True, "e5_ok": False, "e4_K": 2}}]})
    assert "| t5-tiny | chat | [t5-tiny__chat/report.md](t5-tiny__chat/report.md) | 3 | 1 | " \
           "e4 pass, e5 FAIL |" in text and "## Nodes" in text


def test_each_run_asks_for_a_whole_device() -> None:
    assert run_slot("auto", {"GPU": 4, "CPU": 64}) == ("cuda", {"num_cpus": 1, "num_gpus": 1}, 4)
    assert run_slot("auto", {"CPU": 16, SLOT: 2}) == (
        "cpu", {"num_cpus": 1, "resources": {SLOT: 1}}, 2)
    assert run_slot("cpu", {"GPU": 4, SLOT: 1})[0] == "cpu"
    with pytest.raises(BadInput, match="bench_slot"):
        run_slot("auto", {"CPU": 16})
    with pytest.raises(BadInput, match="no GPUs"):
        run_slot("cuda", {"CPU": 16, SLOT: 1})


def test_a_task_runs_in_process_and_sends_its_snapshot_back() -> None:
    outcome = run_task(BenchTask("0:x", 0, "x", 1.0, CONTEXT, UnitWork((SPEC,))))
    result = outcome.measured.runs[SPEC.key]
    assert isinstance(result, RunResult) and result.failed == 0 and result.compiles == 0
    assert len(result.calibration_ms) == 3              # before, between the passes, after
    files = dict(outcome.files)
    assert result.snapshot == f"runs/{SPEC.key}.json" and result.snapshot in files
    assert json.loads(files[result.snapshot])["settings"]["bench_run"] == SPEC.key
    assert outcome.node.environment["device"] == "cpu" and outcome.node.hostname
    lost = UnitWork((SPEC,)).lost(RuntimeError("worker died"))
    assert lost.runs[SPEC.key] == FailedRun(SPEC.key, SPEC.options.label(),
                                            "RuntimeError: worker died", "")


def test_the_progress_line_counts_tasks_by_state_with_the_time_left() -> None:
    now = [0.0]         # the progress's clock, moved by the test alone (no load can move it)
    stream = StringIO()
    progress = ClusterProgress([task("a", 10), task("b", 10), task("c", 40), task("d", 40)],
                               slots=2, stream=stream, clock=lambda: now[0])
    progress.task_started("a", "node-1")
    now[0] = 0.5
    progress.task_finished("a")
    progress.task_started("b", "node-2")
    progress.task_phase("b", "pass 1/2")
    progress.task_started("b", "node-1")                 # its worker died: Ray ran it again
    progress.task_finished("b", "TaskLost: WorkerCrashedError, after 1 retry")
    progress.task_started("c", "node-2")
    line = progress.line()
    assert "1 queued · 1 running (node-2: run c · starting) · 1 done · 1 failed" in line
    assert progress.attempts == {"a": 1, "b": 2, "c": 1}
    # a took 0.5 s of its 10 s estimate: what is left scales down with it, c and d each
    # 40 × (0.5 + 10) / (10 + 10) on 2 slots (PRIOR_SHARE of the 100 s estimated counted as
    # run at it: one run's pace is not yet the study's)
    prior = PRIOR_SHARE * 100.0
    assert progress.remaining_s() == pytest.approx(2 * 40.0 * (0.5 + prior) / (10.0 + prior) / 2)
    text = stream.getvalue()
    assert "retrying run b on node-1 (its worker or node was lost on node-2)" in text
    assert "failed: run b: TaskLost" in text


def test_node_differences_are_named(make_result) -> None:
    fast, slow = (make_result(pass_latencies=[[50.0]]) for _ in range(2))
    results = {"k1": replace(fast, calibration_ms=(3.0, 3.1)),
               "k2": replace(slow, calibration_ms=(6.0, 6.2)), "k3": None}
    placements = {"k1": Placement(node("a")), "k2": Placement(node("b", "arm64"), attempts=2),
                  "k3": Placement(None)}
    summary = nodes_summary(placements, results)
    assert summary["retried"] == ["k2"] and set(summary["by_node"]) == {"id-a", "id-b"}
    assert summary["by_node"]["id-b"]["calibration_ms"]["median"] == pytest.approx(6.1)
    assert summary["differences"][0] == "device differs: a x86_64, b arm64"
    assert "2.00× slower on b than on a" in summary["differences"][1]
    assert "reported as noise" in summary["differences"][1]
    one = nodes_summary({"k1": placements["k1"]}, results)["differences"]
    assert one == ["every run ran on one node (a)"]
    executor = Cluster("ray://head:10001", "cpu", {"resources": {SLOT: 1}}, 2, 2, "2.x").as_dict()
    text = "\n".join(nodes_markdown({"executor": executor, "nodes": summary}))
    assert "## Nodes" in text and "`ray://head:10001`" in text and "| id-b | b | arm64 |" in text
    assert "ran a second time after a lost worker or node: `k2`" in text
    assert nodes_markdown({"executor": {"name": "local"}}) == []


# -- through a local Ray instance ----------------------------------------------------------------
@pytest.fixture
def ray(local_ray):
    """The run's one Ray instance (tests/conftest.py); this module's runners go by value."""
    ray, _ = local_ray
    by_value(ray, __name__)
    return ray


def flaky_runner(task: BenchTask, board=None) -> TaskOutcome:
    """Dies on every attempt ("crash"), on the first only ("flaky"), or never."""
    import ray
    ray.get(board.post.remote(("started", task.id, "host", "node")))
    marker = Path(os.environ["HOME"]) / f"{task.id}.tried"
    if task.id == "crash" or (task.id == "flaky" and not marker.exists()):
        marker.touch()
        os._exit(1)
    if task.id == "slow":
        time.sleep(3600)        # only a cancel ends it before the test's timeout
    return TaskOutcome(task.id, node("host"), 0.0, Measured())


def dispatch(tasks, progress=None):
    from probe.bench.ray_executor import Dispatch
    cluster = Cluster("local", "cpu", {"num_cpus": 1, "resources": {SLOT: 1}}, 1, 1, "2.x")
    return Dispatch(tasks, cluster, progress or ClusterProgress(tasks, 1, StringIO()),
                    runner=flaky_runner)


@pytest.mark.timeout(900)     # 47 s idle; over 300 s with the other core busy (Ray's processes)
def test_a_lost_worker_is_retried_once_then_the_task_is_marked_failed(ray) -> None:
    from probe.bench.ray_executor import TaskLost
    tasks = [task("crash"), task("flaky"), task("ok")]
    done = dispatch(tasks)
    done.run()
    assert isinstance(done.outcomes["ok"], TaskOutcome)
    assert isinstance(done.outcomes["flaky"], TaskOutcome)      # the retry finished it
    lost = done.outcomes["crash"]
    assert isinstance(lost, TaskLost) and "after 1 retry" in str(lost)
    assert done.progress.attempts == {"crash": 2, "flaky": 2, "ok": 1}
    assert done.placement("crash") == Placement(NodeInfo("node", "host", {}), 2)
    failed = done.measured(tasks[0]).runs[SPEC.key]
    assert isinstance(failed, FailedRun) and failed.error.startswith("TaskLost: ")


@pytest.mark.timeout(900)
def test_ctrl_c_cancels_what_is_left_and_keeps_what_finished(ray) -> None:
    class Interrupting(ClusterProgress):
        def task_finished(self, task_id: str, error: str | None = None) -> None:
            super().task_finished(task_id, error)
            raise KeyboardInterrupt

    tasks = [task("ok"), task("slow")]
    done = dispatch(tasks, Interrupting(tasks, 1, StringIO()))
    with pytest.raises(KeyboardInterrupt):
        done.run()           # returns at all: "slow" (an hour) was cancelled, not waited for
    assert set(done.outcomes) == {"ok"}


def _comparable(run: dict) -> dict:
    return {k: v for k, v in run.items() if k not in TIMINGS}


@pytest.mark.slow
@pytest.mark.timeout(900)     # 126 s idle, 574 s with the other core busy
def test_a_study_through_ray_equals_a_local_run_but_for_timings(tmp_path) -> None:
    """`--ray local` in a process of its own: it starts Ray, runs the study and stops Ray."""
    pytest.importorskip("ray")
    local, spread = tmp_path / "local", tmp_path / "ray"
    assert main([*STUDY, "--out", str(local)]) == 0
    home = tempfile.mkdtemp(prefix="ray", dir="/tmp")
    try:
        done = subprocess.run(
            [sys.executable, "-m", "infertop.cli", *STUDY, "--out", str(spread), "--ray", "local"],
            env={**os.environ, "HOME": home, "RAY_TMPDIR": home, "RAY_ADDRESS": ""},
            capture_output=True, text=True, timeout=800)
    finally:
        shutil.rmtree(home, ignore_errors=True)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "2 tasks on 1 node(s)" in done.stderr
    a, b = (json.loads((d / "report.json").read_text()) for d in (local, spread))
    assert a["executor"] == {"name": "local"}
    assert b["executor"]["name"] == "ray" and b["executor"]["address"] == "local"
    assert b["executor"]["asks"] == {"num_cpus": 1, "resources": {SLOT: 1}}
    assert b["checks"] == a["checks"] and b["checks"]["e4_ok"]
    assert set(b["runs"]) == set(a["runs"]) and len(a["runs"]) == 2
    for key, run in a["runs"].items():
        assert _comparable(b["runs"][key]) == _comparable(run), key
        assert b["runs"][key]["node"]["hostname"] and b["runs"][key]["node"]["attempts"] == 1
        assert (spread / b["runs"][key]["snapshot"]).is_file()
    assert b["nodes"]["differences"] == [f"every run ran on one node "
                                         f"({b['runs'][key]['node']['hostname']})"]
    assert "## Nodes" in (spread / "report.md").read_text()
