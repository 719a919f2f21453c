"""The progress line of a study spread over a cluster: tasks queued, running (on which node,
doing what), done and failed, and the time left.

Time left is the work not done — each task's estimate, scaled by how the finished tasks
compared with theirs, less what the running ones have spent — spread over the slots that run
at once, and never less than the longest running task still needs; shown through
probe/bench/eta.py, which keeps it from jumping and says where it cannot know.
"""

from __future__ import annotations

import time
from typing import Sequence, TextIO

from probe.bench.eta import Eta
from probe.bench.progress import StatusLine
from probe.bench.tasks import BenchTask
from probe.common.units import fmt_clock

REDRAW_S = 1.0


class ClusterProgress(StatusLine):
    def __init__(self, tasks: Sequence[BenchTask], slots: int,
                 stream: TextIO | None = None) -> None:
        super().__init__(stream)
        self.titles = {t.id: t.title for t in tasks}
        self.estimates = {t.id: t.estimate_s for t in tasks}
        self.slots = max(1, slots)
        self.started = time.perf_counter()
        self.state = {t.id: "queued" for t in tasks}
        self.node: dict[str, str] = {}
        self.phase: dict[str, str] = {}
        self.attempts: dict[str, int] = {}
        self.since: dict[str, float] = {}
        self.actual: dict[str, float] = {}
        self._drawn = 0.0
        self.eta = Eta()        # what the line shows: it does not jump (probe/bench/eta.py)
        self._shown_fraction: float | None = None

    # -- events --------------------------------------------------------------------------------
    def task_started(self, task_id: str, hostname: str) -> None:
        self.attempts[task_id] = self.attempts.get(task_id, 0) + 1
        if self.attempts[task_id] > 1:
            self.message(f"retrying {self.titles[task_id]} on {hostname} (its worker or node "
                         f"was lost on {self.node.get(task_id, '?')})")
        self.state[task_id], self.node[task_id] = "running", hostname
        self.since[task_id] = time.perf_counter()
        self.phase[task_id] = "starting"
        self._emit(force=True)

    def task_phase(self, task_id: str, phase: str) -> None:
        self.phase[task_id] = phase
        self._emit()

    def task_finished(self, task_id: str, error: str | None = None) -> None:
        self.state[task_id] = "failed" if error else "done"
        if task_id in self.since:
            self.actual[task_id] = time.perf_counter() - self.since[task_id]
        if error:
            self.message(f"failed: {self.titles[task_id]}: {error}")
        self._emit(force=True)

    def tick(self) -> None:
        self._emit()

    # -- numbers -------------------------------------------------------------------------------
    def counts(self) -> dict[str, int]:
        out = {"queued": 0, "running": 0, "done": 0, "failed": 0}
        for state in self.state.values():
            out[state] += 1
        return out

    def _scale(self) -> float:
        done = [t for t in self.actual if self.state[t] == "done"]
        estimated = sum(self.estimates[t] for t in done)
        return sum(self.actual[t] for t in done) / estimated if estimated > 0 else 1.0

    def remaining_s(self) -> float:
        scale, now = self._scale(), time.perf_counter()
        queued = sum(self.estimates[t] * scale for t, s in self.state.items() if s == "queued")
        running = [max(self.estimates[t] * scale - (now - self.since[t]), 0.0)
                   for t, s in self.state.items() if s == "running"]
        return max((queued + sum(running)) / self.slots, max(running, default=0.0))

    def line(self) -> str:
        counts = self.counts()
        elapsed = time.perf_counter() - self.started
        finished = counts["done"] + counts["failed"]
        projection = self.eta.update(elapsed, self.remaining_s(), finished,
                                     guess=counts["done"] == 0)
        if projection.left_s is not None or self._shown_fraction is None:
            left = self.remaining_s() if projection.left_s is None else projection.left_s
            self._shown_fraction = elapsed / (elapsed + left) if elapsed + left > 0 else 1.0
        fraction = self._shown_fraction      # unknown: the percentage stays where it was
        running = "; ".join(f"{self.node[t]}: {self.titles[t]} · {self.phase.get(t, '')}"
                            for t, s in self.state.items() if s == "running")
        return (f"[{100 * fraction:3.0f}%] {counts['queued']} queued · {counts['running']} "
                f"running{f' ({running})' if running else ''} · {counts['done']} done · "
                f"{counts['failed']} failed · {fmt_clock(elapsed)} elapsed · "
                f"{projection.text()}")

    def _emit(self, *, force: bool = False) -> None:
        now = time.perf_counter()
        if force or now - self._drawn >= REDRAW_S:     # a terminal redraws once a second
            self.draw(self.line(), force=force)
            self._drawn = now
