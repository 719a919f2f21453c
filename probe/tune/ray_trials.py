"""`tune --search quick|exhaustive --ray`: the search's trials as Ray tasks, as many in flight
as the cluster has slots (a whole CPU node or a GPU each: probe/runs/cluster.py). Each task
measures its candidate alternated with its control on its own node (probe/tune/evaluate.py,
as a local search does), so every ratio is of two configs measured on one machine; the
search merges each result as it arrives (probe/tune/trial_pool.py)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from probe.runs.cluster import require_ray
from probe.tune.evaluate import Job
from probe.tune.ray_steps import POLL_S, RaySteps, TaskFailed
from probe.tune.search import Measured
from probe.tune.trial_pool import Outcome
from probe.tune.tuned_settings import Setup


@dataclass
class RayTrials:
    steps: RaySteps
    job_of: Callable[[Setup, str, Setup | None], Job]
    # what a result passes through on arrival (the runner keeps the last capacity found)
    arrived: Callable[[Measured], Measured] = lambda measured: measured
    _in_flight: dict[Any, tuple[int, Job]] = field(default_factory=dict)

    @property
    def width(self) -> int:
        return self.steps.width

    def start(self, ticket: int, setup: Setup, label: str, control: Setup | None) -> None:
        job = self.job_of(setup, label, control)
        self._in_flight[self.steps.submit(job)] = (ticket, job)
        if len(self._in_flight) > 1:
            self.steps.say(f"{len(self._in_flight)} trials in flight on Ray: "
                           + ", ".join(j.label for _, j in self._in_flight.values()))

    def finished(self) -> list[tuple[int, Outcome]]:
        ray = require_ray()
        while self._in_flight:
            if self.steps.stop.is_set():      # an unfinished trial proves nothing
                for ref in self._in_flight:
                    ray.cancel(ref, force=True)
                self._in_flight.clear()
                return []
            ready, _ = ray.wait(list(self._in_flight), num_returns=1, timeout=POLL_S)
            if ready:
                return [self._merged(ray, ref) for ref in ready]
        return []

    def _merged(self, ray, ref) -> tuple[int, Outcome]:
        ticket, job = self._in_flight.pop(ref)
        try:
            return ticket, self.arrived(self.steps.outcome(ray, job, ref))
        except TaskFailed as exc:
            return ticket, exc
