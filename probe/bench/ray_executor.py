"""`bench --ray`: every (model, trace) study planned up front, every unit of runs a Ray task
that owns a whole device, and each study's report written from what the tasks sent back —
the same report.md, report.json and runs/ as a local run, plus where each run ran."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Union

from probe.bench.experiments import EXPERIMENTS, measures_machine
from probe.bench.experiments.base import OpenLoopExperiment
from probe.bench.matrix import write_index
from probe.bench.nodes import NodeInfo, Placement, nodes_summary
from probe.bench.progress import REDRAW_S, ClusterProgress
from probe.bench.report import write_study_report
from probe.bench.study import Study
from probe.bench.study_setup import calibration_spread, measuring, prepare_study
from probe.bench.tasks import (
    BenchTask,
    MachineWork,
    Measured,
    OpenLoopWork,
    TaskOutcome,
    UnitWork,
    Work,
    run_task,
)
from probe.bench.torch_trace import TraceFolder
from probe.checks.interrupts import StopSignals
from probe.runs.cluster import RETRIES, Cluster, connect, require_ray
from probe.runs.plan import BenchSettings
from probe.runs.results import FailedRun


class TaskLost(Exception):
    """A task Ray could not finish: its worker died or its node left, twice; or it raised
    outside the run's own error handling."""


Gathered = Union[TaskOutcome, TaskLost]
MACHINE_ESTIMATE_S = 30.0           # the roofline's bandwidth and GEMM measurement


def run_on_ray(settings: BenchSettings, started: float, stops: StopSignals | None = None) -> int:
    from probe.engine.model.loading import load_model

    cells = settings.cells()
    for model in dict.fromkeys(cell.model for cell in cells):
        load_model(model)           # a bad model is refused here, before anything is written
    cluster = connect(settings.ray or "", settings.device)
    try:
        studies = [prepare_study(cell, cluster.device, None) for cell in cells]
        tasks = plan_tasks(cells, studies)
        for cell in cells:
            cell.out.mkdir(parents=True, exist_ok=True)  # only now: models, traces, cluster good
        progress = ClusterProgress(tasks, cluster.slots)
        progress.message(f"ray at {cluster.address}: {len(tasks)} tasks on {cluster.nodes} "
                         f"node(s), {cluster.slots} at a time, each asking for "
                         + ", ".join(f"{k}={v}" for k, v in cluster.asks.items()))
        dispatch = Dispatch(tasks, cluster, progress)
        with measuring(progress, None, stops) as stop:
            dispatch.run()
    finally:
        cluster.close()
    write_reports(settings, studies, dispatch, interrupted=stop.interrupted, started=started)
    return stop.exit_status


def write_reports(settings: BenchSettings, studies: list[Study], dispatch: Dispatch, *,
                  interrupted: bool, started: float) -> None:
    """Each study's report from what its tasks sent back and, for a matrix, the index."""
    cells, executor = settings.cells(), dispatch.cluster.as_dict()
    machines = {t.context.model: {**(dispatch.measured(t).machine or {}),
                                  "measured_on": dispatch.placement(t.id).as_dict()}
                for t in dispatch.tasks
                if isinstance(t.work, MachineWork) and t.id in dispatch.outcomes}
    placements: dict[str, Placement] = {}
    results: dict = {}
    reports = []
    for index, (cell, study) in enumerate(zip(cells, studies)):
        places = gather_cell(index, study, dispatch, cell.out)
        trace = TraceFolder(cell.out / "torch_trace") if cell.torch_trace else None
        reports.append(write_study_report(
            cell, study, cell_environment(study, places, machines.get(cell.model)), trace,
            interrupted=interrupted, started=started, executor=executor, places=places))
        prefix = f"{cell.out.name}/" if settings.matrix else ""
        placements.update({prefix + k: p for k, p in places.items()})
        results.update({prefix + k: r for k, r in study.results.items()})
    if settings.matrix:
        write_index(settings, cells, reports, executor, nodes_summary(placements, results),
                    interrupted=interrupted, wall_s=time.perf_counter() - started)


def plan_tasks(cells: list[BenchSettings], studies: list[Study]) -> list[BenchTask]:
    """Every unit of every study, each open-loop experiment, and the roofline's machine
    measurement once per model; the longest first, so the last to finish is a short one."""
    tasks: list[BenchTask] = []
    measured_models: set[str] = set()
    for index, (cell, study) in enumerate(zip(cells, studies)):
        make = _task_maker(index, cell, study, matrix=len(cells) > 1)
        if measures_machine(cell.experiments) and cell.model not in measured_models:
            measured_models.add(cell.model)
            tasks.append(make("machine", "roofline · bandwidth and GEMM throughput",
                              MACHINE_ESTIMATE_S, MachineWork(), shared=True))
        study.paired_stops = False      # tasks run at once: no partner has finished first
        for unit in study.units:
            experiments, label = study.describe(unit)
            tasks.append(make("+".join(unit), f"{experiments} · {label}", study.estimate_s(unit),
                              UnitWork(tuple(study.runs[k].spec for k in unit),
                                       {k: study.runs[k].extras for k in unit})))
        for name in cell.experiments:
            experiment = EXPERIMENTS[name]
            if isinstance(experiment, OpenLoopExperiment):
                tasks.append(make(name, f"{name} · open loop", experiment.estimate_s(study.plan),
                                  OpenLoopWork(name, study.plan)))
    return sorted(tasks, key=lambda t: -t.estimate_s)


def _task_maker(index: int, cell: BenchSettings, study: Study, *, matrix: bool):
    where = f"{cell.model}/{cell.trace} · " if matrix else ""

    def make(id: str, title: str, estimate_s: float, work: Work, shared: bool = False):
        return BenchTask(f"{index}:{id}", None if shared else index, where + title, estimate_s,
                         study.context, work, cell.threads, cell.torch_trace)
    return make


class Board:
    """A Ray actor where tasks post when they start (on which node) and each phase; the
    driver drains it."""

    def __init__(self) -> None:
        self.events: list[tuple] = []

    def post(self, event: tuple) -> None:
        self.events.append(event)

    def drain(self) -> list[tuple]:
        events, self.events = self.events, []
        return events


@dataclass
class Dispatch:
    tasks: list[BenchTask]
    cluster: Cluster
    progress: ClusterProgress
    runner: Callable[..., TaskOutcome] = run_task       # a test swaps in one that crashes
    outcomes: dict[str, Gathered] = field(default_factory=dict)
    last_node: dict[str, tuple[str, str]] = field(default_factory=dict)  # id → (host, node id)

    def run(self) -> None:
        """Submit every task, gather each as it finishes. A lost worker or node costs a task
        one retry (Ray's, anywhere there is a free slot), then it is marked failed; Ctrl-C
        cancels what has not finished and keeps what has."""
        ray = require_ray()
        board = ray.remote(num_cpus=0)(Board).remote()
        remote = ray.remote(self.runner).options(**self.cluster.asks, max_retries=RETRIES,
                                                 retry_exceptions=False)
        pending = {remote.remote(task, board): task.id for task in self.tasks}
        try:
            while pending:
                ready, _ = ray.wait(list(pending), num_returns=1, timeout=REDRAW_S)
                self._drain(ray.get(board.drain.remote()))
                for ref in ready:
                    self._gather(ray, ref, pending.pop(ref))
                self.progress.tick()
        except KeyboardInterrupt:
            for ref in pending:
                ray.cancel(ref, force=True)
            raise
        finally:
            ray.kill(board)

    def _drain(self, events: list[tuple]) -> None:
        for kind, task_id, *rest in events:
            if kind == "started":
                self.last_node[task_id] = (rest[0], rest[1])
                self.progress.task_started(task_id, rest[0])
            else:
                self.progress.task_phase(task_id, rest[0])

    def _gather(self, ray, ref, task_id: str) -> None:
        try:
            outcome: Gathered = ray.get(ref)
        except ray.exceptions.RayError as exc:
            outcome = TaskLost(lost_reason(ray, exc))
        self.outcomes[task_id] = outcome
        self.progress.task_finished(task_id, failure(outcome))

    def measured(self, task: BenchTask) -> Measured:
        outcome = self.outcomes[task.id]
        return outcome.measured if isinstance(outcome, TaskOutcome) else task.work.lost(outcome)

    def placement(self, task_id: str) -> Placement:
        outcome, attempts = self.outcomes[task_id], self.progress.attempts.get(task_id, 1)
        if isinstance(outcome, TaskOutcome):
            return Placement(outcome.node, attempts)
        host, node_id = self.last_node.get(task_id, ("", ""))
        return Placement(NodeInfo(node_id, host, {}) if node_id else None, attempts)


def lost_reason(ray, exc: BaseException) -> str:
    lines = [line for line in str(exc).strip().splitlines() if line.strip()]
    if isinstance(exc, ray.exceptions.RayTaskError):     # raised: not retried
        return f"the task raised: {lines[-1] if lines else type(exc).__name__}"[:500]
    return (f"{type(exc).__name__}, after {RETRIES} retry: "
            f"{lines[0] if lines else 'no reason given'}")[:500]


def failure(outcome: Gathered) -> str | None:
    """Why a task counts as failed on the progress line: lost, or a run of it failed."""
    if isinstance(outcome, TaskLost):
        return str(outcome)
    failed = [r.error for r in outcome.measured.runs.values() if isinstance(r, FailedRun)]
    failed += [results["error"] for results, _ in outcome.measured.open_loop.values()
               if "error" in results]
    return failed[0] if failed else None


def gather_cell(index: int, study: Study, dispatch: Dispatch, out: Path) -> dict[str, Placement]:
    """Fill one study's results from its tasks and write the files they sent back (snapshots,
    profile, TORCH_TRACE logs) into its folder; where each run and experiment ran."""
    places: dict[str, Placement] = {}
    for task in dispatch.tasks:
        if task.cell != index or task.id not in dispatch.outcomes:
            continue            # another study's, or never finished (Ctrl-C): "not run"
        measured = dispatch.measured(task)
        study.results.update(measured.runs)
        study.open_loop.update(measured.open_loop)
        place = dispatch.placement(task.id)
        places.update({name: place for name in (*measured.runs, *measured.open_loop)})
        outcome = dispatch.outcomes[task.id]
        for relative, data in outcome.files if isinstance(outcome, TaskOutcome) else ():
            path = out / relative
            if ".." not in Path(relative).parts and not Path(relative).is_absolute():
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(data)
    return places


def cell_environment(study: Study, places: dict[str, Placement], machine: dict | None) -> dict:
    """The first node's environment (report.json `nodes` has every node's), the calibration
    spread over all of the study's runs, and the roofline's machine where it was measured."""
    first = next((p.node for p in places.values() if p.node and p.node.environment), None)
    environment: dict[str, object] = (dict(first.environment) if first
                                      else {"device": study.context.device})
    environment.update(calibration_spread(study))
    if machine is not None:
        environment["roofline"] = machine
    return environment
