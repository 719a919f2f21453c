"""`tune --ray`: one step's candidates measured at once, each a Ray task that owns a node slot
(a whole CPU node or a GPU, as bench's runs do: probe/runs/cluster.py), every one the same
`evaluate` a local tune runs. The sessions each task wrote come back and land in --out/runs;
the search (search.py) then judges the step exactly as it judges one change."""

from __future__ import annotations

import socket
import tempfile
import threading
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable

from probe.engine.workload_setup import prepare_workload
from probe.runs.cluster import RETRIES, Cluster, connect, require_ray
from probe.runs.runs import RunContext
from probe.runs.spread import Spread
from probe.runs.workers import loaded_model, physical_cores
from probe.tune.evaluate import Job, evaluate
from probe.tune.search import Measured

POLL_S = 1.0


@dataclass(frozen=True)
class JobOutcome:
    measured: Measured
    files: tuple[tuple[str, bytes], ...]    # each run's session: (file name, its bytes)
    host: str
    wall_s: float


class TaskFailed(RuntimeError):
    """A Ray task that raised, or whose node was lost twice."""


def nothing_measured() -> Measured:
    """A candidate whose task failed, or a step a signal cut: no figure (the search drops
    it, or stops)."""
    return Measured(Spread(None, None, None, 0), None, None, None, None)


def run_job(job: Job, context: RunContext, trace: str, threads: int | None,
            named_dir: str) -> JobOutcome:
    """What a node runs: the model loaded once per worker, the trace prepared there, the
    config measured into a temporary folder whose files go back to the driver."""
    import torch

    from probe.engine.observe.device_probe import resolve_device
    started = time.perf_counter()
    device = resolve_device(context.device)
    # Ray sets OMP_NUM_THREADS to the task's num_cpus; a CPU run owns its node
    chosen = threads or (None if device.type == "cuda" else physical_cores())
    if chosen:
        torch.set_num_threads(chosen)
    workload = prepare_workload(trace)
    with tempfile.TemporaryDirectory(prefix="infertop-tune-") as tmp:
        here = replace(context, device=str(device), loaded=loaded_model(context.model),
                       out_dir=Path(tmp))
        measured = evaluate(job, here, workload, runs_dir=Path(tmp), named_dir=Path(named_dir),
                            stop=threading.Event(), say=lambda text: None)
        files = tuple((p.name, p.read_bytes()) for p in sorted(Path(tmp).glob("*.json")))
    return JobOutcome(measured, files, socket.gethostname(), time.perf_counter() - started)


@dataclass
class RaySteps:
    """The cluster tune's steps run on: `width` candidates at once, one per slot."""
    cluster: Cluster
    context: RunContext
    trace: str
    threads: int | None
    runs_dir: Path
    stop: threading.Event
    say: Callable[[str], None]
    runner: Callable[..., JobOutcome] = run_job      # a test swaps in a fake engine

    @classmethod
    def connect(cls, target: str, device: str, context: RunContext, trace: str,
                threads: int | None, runs_dir: Path, stop: threading.Event,
                say: Callable[[str], None]) -> RaySteps:
        """Join (or start) the cluster; `device` as given (auto: its GPUs if it has any)."""
        cluster = connect(target, device)
        say(f"ray at {cluster.address}: {cluster.slots} slot(s) on {cluster.nodes} node(s): up "
            f"to {cluster.slots} candidate(s) of a step at once, each asking for "
            + ", ".join(f"{k}={v}" for k, v in cluster.asks.items()))
        # what crosses to a node: the model is loaded there, the files come back here
        shipped = replace(context, device=cluster.device, loaded=None, out_dir=None)
        return cls(cluster, shipped, trace, threads, runs_dir, stop, say)

    @property
    def width(self) -> int:
        return max(1, self.cluster.slots)

    def submit(self, job: Job):
        """One job as a Ray task on a slot of its own; its object ref."""
        ray = require_ray()
        remote = ray.remote(**self.cluster.asks)(self.runner).options(
            max_retries=RETRIES, retry_exceptions=False)
        return remote.remote(job, self.context, self.trace, self.threads, str(self.runs_dir))

    def measure(self, jobs: list[Job]) -> list[Measured]:
        """Every job as its own task, gathered in order; [] when a stop signal came first
        (what had not finished is cancelled: an unfinished step proves nothing)."""
        ray = require_ray()
        if len(jobs) > 1:
            self.say(f"step: {len(jobs)} candidates at once on Ray: "
                     + ", ".join(j.label for j in jobs))
        refs = [self.submit(job) for job in jobs]
        pending = list(refs)
        while pending:
            if self.stop.is_set():
                for ref in pending:
                    ray.cancel(ref, force=True)
                return []
            _, pending = ray.wait(pending, num_returns=len(pending), timeout=POLL_S)
        return [self._gathered(ray, job, ref) for job, ref in zip(jobs, refs)]

    def _gathered(self, ray, job: Job, ref) -> Measured:
        try:
            return self.outcome(ray, job, ref)
        except TaskFailed:                     # lost twice, or it raised: nothing measured
            return nothing_measured()

    def outcome(self, ray, job: Job, ref) -> Measured:
        """A finished task's measurement, its sessions written into the runs folder;
        TaskFailed (said, and naming why) when the task raised or was lost twice."""
        try:
            outcome: JobOutcome = ray.get(ref)
        except ray.exceptions.RayError as exc:
            lines = [line for line in str(exc).splitlines() if line.strip()]
            why = f"its Ray task failed: {lines[-1] if lines else exc}"[:300]
            self.say(f"{job.label}: {why}")
            raise TaskFailed(why) from None
        for name, data in outcome.files:
            if Path(name).name == name:             # a bare file name, nothing else
                (self.runs_dir / name).write_bytes(data)
        self.say(f"{job.label}: measured on {outcome.host} in {outcome.wall_s:.0f} s")
        return outcome.measured

    def close(self) -> None:
        self.cluster.close()
