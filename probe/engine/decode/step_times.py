"""Continuous batching's steps as the host and the GPU saw them, over the last WINDOW steps:
what tells a host-bound loop (the GPU waits for the host to queue the next step) from a
GPU-bound one (the host waits for the GPU)."""

from __future__ import annotations

from collections import deque

from probe.contract.records import BatchSteps

WINDOW = 256


class StepTimes:
    def __init__(self) -> None:
        self.steps = 0
        self._host_s: deque[float] = deque(maxlen=WINDOW)
        self._period_s: deque[float] = deque(maxlen=WINDOW)
        self._rows: deque[int] = deque(maxlen=WINDOW)
        self._running: deque[int] = deque(maxlen=WINDOW)
        self._last_done_s: float | None = None

    def add(self, host_s: float, *, rows: int, running: int) -> None:
        """A step's host time (its bookkeeping and launch, not its waits for the GPU), the
        rows it ran over (a captured size, or every slot) and the requests in them."""
        self.steps += 1
        self._host_s.append(host_s)
        self._rows.append(rows)
        self._running.append(running)

    def passed(self, done_s: float) -> None:
        """The GPU passed a step's end at `done_s`: the step period is the time since the
        previous one (GPU work and any gap the host left)."""
        if self._last_done_s is not None:
            self._period_s.append(done_s - self._last_done_s)
        self._last_done_s = done_s

    def idle(self) -> None:
        """Nothing ran for a while: the next period starts fresh."""
        self._last_done_s = None

    def snapshot(self, slots: int, captured: tuple[int, ...], on_gpu: bool = True
                 ) -> BatchSteps:
        """Medians of the host time and the period (a first step's warm-up, a join's encoder
        would pull a mean far off the steady state); means of the rows and requests."""
        def mean(values) -> float | None:
            return sum(values) / len(values) if values else None

        def median(values) -> float | None:
            ordered = sorted(values)
            return ordered[len(ordered) // 2] if ordered else None
        host, period = median(self._host_s), median(self._period_s)
        return BatchSteps(steps=self.steps, slots=slots, captured=captured,
                          running=mean(self._running), rows=mean(self._rows),
                          host_ms=None if host is None else host * 1e3,
                          period_ms=None if period is None else period * 1e3, on_gpu=on_gpu)
