"""What crosses to a Ray worker and back: one task — a unit of runs, an open-loop experiment,
or the roofline's measurement of the machine — and its outcome. `run_task` is what a worker
runs; it needs no Ray, so a test can call it in this process."""

from __future__ import annotations

import tempfile
import time
import warnings
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable, Mapping, Union

from probe.bench.experiments.roofline import measure_machine
from probe.bench.nodes import NodeInfo
from probe.bench.study import failed_open_loop, failed_runs, measure_open_loop, run_unit
from probe.bench.torch_trace import TorchTrace
from probe.runs.openloop import OpenLoopStudy
from probe.runs.plan import Plan, RunSpec
from probe.runs.results import RunOutcome
from probe.runs.runs import Extra, RunContext, RunHooks
from probe.runs.workers import loaded_model, physical_cores

Phase = Callable[[str], None]           # what a task is doing now, for the progress line


@dataclass(frozen=True)
class Measured:
    """What a task measured: runs by key, open-loop experiments by id (results, section), or
    the machine's roofline figures."""
    runs: Mapping[str, RunOutcome] = field(default_factory=dict)
    open_loop: Mapping[str, tuple[dict, dict]] = field(default_factory=dict)
    machine: dict | None = None


@dataclass(frozen=True)
class UnitWork:
    """One config, or an interleaved group that must share an engine, on one request list."""
    specs: tuple[RunSpec, ...]
    extras: Mapping[str, frozenset[Extra]] = field(default_factory=dict)

    def run(self, context: RunContext, hooks: RunHooks, phase: Phase) -> Measured:
        return Measured(runs=run_unit(list(self.specs), context, hooks, dict(self.extras)))

    def lost(self, exc: BaseException) -> Measured:
        return Measured(runs=failed_runs(list(self.specs), exc))


@dataclass(frozen=True)
class OpenLoopWork:
    """E7 or E8 whole: their offered rates are multiples of the capacity measured on the node
    that serves them, so a sweep's points cannot be spread over machines of other speeds."""
    experiment: str
    plan: Plan

    def run(self, context: RunContext, hooks: RunHooks, phase: Phase) -> Measured:
        study = OpenLoopStudy(context, self.plan, {}, phase)
        return Measured(open_loop={self.experiment: measure_open_loop(self.experiment, study)})

    def lost(self, exc: BaseException) -> Measured:
        return Measured(open_loop={self.experiment: failed_open_loop(self.experiment, exc)})


@dataclass(frozen=True)
class MachineWork:
    """The roofline's bandwidth and GEMM throughput, measured on a device a run would own."""

    def run(self, context: RunContext, hooks: RunHooks, phase: Phase) -> Measured:
        import torch

        return Measured(machine=measure_machine(context.require_model(),
                                                torch.device(context.device)))

    def lost(self, exc: BaseException) -> Measured:
        return Measured(machine={"error": f"{type(exc).__name__}: {exc}"})


Work = Union[UnitWork, OpenLoopWork, MachineWork]


@dataclass(frozen=True)
class BenchTask:
    id: str
    cell: int | None                # the (model, trace) study it belongs to; None: the model's
    title: str                      # what the progress line calls it
    estimate_s: float
    context: RunContext             # loaded=None, out_dir=None: the node fills them in
    work: Work
    threads: int | None = None      # --threads; else a CPU run uses every core of its node
    torch_trace: bool = False


@dataclass(frozen=True)
class TaskOutcome:
    task_id: str
    node: NodeInfo
    wall_s: float
    measured: Measured
    files: tuple[tuple[str, bytes], ...] = ()    # snapshots, profile, logs: relative to --out


def run_task(task: BenchTask, board=None) -> TaskOutcome:
    """Run one task on this node into a temporary folder, and return what it measured and
    wrote. `board` (a Ray actor) hears when it starts, where, and each phase."""
    import torch

    from probe.engine.compile_cache import share_inductor_cache
    from probe.engine.observe.device_probe import resolve_device

    share_inductor_cache()      # the node's runs compile each graph once, for later studies too
    started = time.perf_counter()
    device = resolve_device(task.context.device)
    # Ray sets OMP_NUM_THREADS to the task's num_cpus; a CPU run owns its node, and torch's own
    # default there is one thread per physical core
    threads = task.threads or (None if device.type == "cuda" else physical_cores())
    if threads:
        torch.set_num_threads(threads)
    node = NodeInfo.here(device)
    _post(board, "started", task.id, node.hostname, node.node_id, wait=True)
    with tempfile.TemporaryDirectory(prefix="infertop-bench-") as tmp, \
            warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = Path(tmp)
        context = replace(task.context, device=str(device), out_dir=out,
                          loaded=loaded_model(task.context.model))
        trace = TorchTrace(out / "torch_trace") if task.torch_trace else None
        phase = _phase_reporter(board, task.id)
        try:
            measured = task.work.run(context, RunHooks(
                on_request=lambda name, done, total: phase(name),
                after_engine=trace.attach if trace else RunHooks().after_engine), phase)
        finally:
            if trace:
                trace.close()
        files = tuple((str(p.relative_to(out)), p.read_bytes())
                      for p in sorted(out.rglob("*")) if p.is_file())
    return TaskOutcome(task.id, node, time.perf_counter() - started, measured, files)


def _post(board, *event, wait: bool = False) -> None:
    """`wait`: a start is delivered before the run begins, so a worker that dies in it is
    still seen to have started (the retry counts as a second attempt)."""
    if board is not None:
        posted = board.post.remote(event)
        if wait:
            import ray
            ray.get(posted)


def _phase_reporter(board, task_id: str) -> Phase:
    last = [""]

    def phase(text: str) -> None:
        if text != last[0]:            # one message per phase, not per request
            last[0] = text
            _post(board, "phase", task_id, text)
    return phase
