"""`tune --ray`: configs measured as Ray tasks, each owning a node slot (a whole CPU node or a
GPU, as bench's runs do: probe/runs/cluster.py), as many in flight as the cluster has slots,
every one the same `evaluate` a local tune runs (its candidate alternated with its control on
one node, so every ratio is of two configs measured on one machine). The sessions each task
wrote come back and land in --out/runs. The combo search keeps trials in flight and merges
each as it ends (a `TrialPool`: probe/tune/trial_pool.py); the hill-climb measures one step's
candidates at once (`measure`, through the same two calls) and judges the step exactly as it
judges one change (search.py)."""

from __future__ import annotations

import socket
import tempfile
import threading
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable

from probe.engine.workload_setup import prepare_workload
from probe.runs.cluster import RETRIES, Cluster, connect, require_ray
from probe.runs.runs import RunContext
from probe.runs.spread import Spread
from probe.runs.workers import loaded_model, physical_cores
from probe.tune.evaluate import Job, evaluate
from probe.tune.search import Measured
from probe.tune.trial_pool import Outcome
from probe.tune.tuned_settings import Setup

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
class RayPool:
    """The cluster tune measures on: `width` configs at once, one per slot."""
    cluster: Cluster
    context: RunContext
    trace: str
    threads: int | None
    runs_dir: Path
    stop: threading.Event
    say: Callable[[str], None]
    runner: Callable[..., JobOutcome] = run_job      # a test swaps in a fake engine
    # a trial's job (the combo search's `start`), and what a result passes through on arrival
    job_of: Callable[[Setup, str, Setup | None], Job] | None = None
    arrived: Callable[[Measured], Measured] = lambda measured: measured
    _in_flight: dict[Any, tuple[int, Job]] = field(default_factory=dict, init=False)

    @classmethod
    def connect(cls, target: str, device: str, context: RunContext, trace: str,
                threads: int | None, runs_dir: Path, stop: threading.Event,
                say: Callable[[str], None]) -> RayPool:
        """Join (or start) the cluster; `device` as given (auto: its GPUs if it has any)."""
        cluster = connect(target, device)
        say(f"ray at {cluster.address}: {cluster.slots} slot(s) on {cluster.nodes} node(s): up "
            f"to {cluster.slots} config(s) at once, each asking for "
            + ", ".join(f"{k}={v}" for k, v in cluster.asks.items()))
        # what crosses to a node: the model is loaded there, the files come back here
        shipped = replace(context, device=cluster.device, loaded=None, out_dir=None)
        return cls(cluster, shipped, trace, threads, runs_dir, stop, say)

    @property
    def width(self) -> int:
        return max(1, self.cluster.slots)

    def submit(self, ticket: int, job: Job) -> None:
        """One job as a Ray task on a slot of its own, in flight under `ticket`."""
        ray = require_ray()
        remote = ray.remote(**self.cluster.asks)(self.runner).options(
            max_retries=RETRIES, retry_exceptions=False)
        ref = remote.remote(job, self.context, self.trace, self.threads, str(self.runs_dir))
        self._in_flight[ref] = (ticket, job)

    def start(self, ticket: int, setup: Setup, label: str, control: Setup | None) -> None:
        assert self.job_of is not None, "a trial pool needs job_of"
        self.submit(ticket, self.job_of(setup, label, control))
        if len(self._in_flight) > 1:
            self.say(f"{len(self._in_flight)} trials in flight on Ray: "
                     + ", ".join(j.label for _, j in self._in_flight.values()))

    def finished(self) -> list[tuple[int, Outcome]]:
        """At least one job ended: each (ticket, its Measured or TaskFailed); [] when a stop
        came first (what was in flight is cancelled: an unfinished run proves nothing)."""
        ray = require_ray()
        while self._in_flight:
            if self.stop.is_set():
                for ref in self._in_flight:
                    ray.cancel(ref, force=True)
                self._in_flight.clear()
                return []
            ready, _ = ray.wait(list(self._in_flight), num_returns=1, timeout=POLL_S)
            if ready:
                return [self._merged(ray, ref) for ref in ready]
        return []

    def measure(self, jobs: list[Job]) -> list[Measured]:
        """One step's candidates at once, in order (a failed task: nothing measured); [] when
        a stop signal came first."""
        if len(jobs) > 1:
            self.say(f"step: {len(jobs)} candidates at once on Ray: "
                     + ", ".join(j.label for j in jobs))
        for ticket, job in enumerate(jobs):
            self.submit(ticket, job)
        ended: dict[int, Outcome] = {}
        while len(ended) < len(jobs):
            arrived = self.finished()
            if not arrived:
                return []
            ended.update(arrived)
        return [m if isinstance(m, Measured) else nothing_measured()
                for m in (ended[t] for t in range(len(jobs)))]

    def _merged(self, ray, ref) -> tuple[int, Outcome]:
        """A finished task's ticket and measurement, its sessions written into the runs
        folder; TaskFailed (said, and naming why) when the task raised or was lost twice."""
        ticket, job = self._in_flight.pop(ref)
        try:
            outcome: JobOutcome = ray.get(ref)
        except ray.exceptions.RayError as exc:
            lines = [line for line in str(exc).splitlines() if line.strip()]
            why = f"its Ray task failed: {lines[-1] if lines else exc}"[:300]
            self.say(f"{job.label}: {why}")
            return ticket, TaskFailed(why)
        for name, data in outcome.files:
            if Path(name).name == name:             # a bare file name, nothing else
                (self.runs_dir / name).write_bytes(data)
        self.say(f"{job.label}: measured on {outcome.host} in {outcome.wall_s:.0f} s")
        return ticket, self.arrived(outcome.measured)

    def close(self) -> None:
        self.cluster.close()
