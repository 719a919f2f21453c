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
        self._join_s: deque[float] = deque(maxlen=WINDOW)     # a step's joins before it
        self._period_s: deque[float] = deque(maxlen=WINDOW)
        self._rows: deque[int] = deque(maxlen=WINDOW)
        self._running: deque[int] = deque(maxlen=WINDOW)
        self._joining_s = 0.0           # joins since the last step
        self._last_done_s: float | None = None

    def join(self, host_s: float) -> None:
        """A join's host time (its encoder run, launched): the next step's."""
        self._joining_s += host_s

    def add(self, host_s: float, *, rows: int, running: int, compiled: bool = False) -> None:
        """A step's host time (its bookkeeping and launch, not its waits for the GPU), the
        rows it ran over (a captured size, or every slot) and the requests in them.
        `compiled`: a compile ran in it, which is no measure of the loop (left out)."""
        self.steps += 1
        self._rows.append(rows)
        self._running.append(running)
        if not compiled:
            self._host_s.append(host_s)
            self._join_s.append(self._joining_s)
        self._joining_s = 0.0

    def passed(self, done_s: float, *, compiled: bool = False) -> None:
        """The GPU passed a step's end at `done_s`: the step period is the time since the
        previous one (GPU work and any gap the host left), unless a compile ran in it."""
        if self._last_done_s is not None and not compiled:
            self._period_s.append(done_s - self._last_done_s)
        self._last_done_s = done_s

    def idle(self) -> None:
        """Nothing ran for a while: the next period starts fresh."""
        self._last_done_s = None

    def snapshot(self, slots: int, captured: tuple[int, ...], on_gpu: bool = True
                 ) -> BatchSteps:
        """Means over the window (BatchSteps says why not medians)."""
        def mean(values) -> float | None:
            return sum(values) / len(values) if values else None

        def ms(seconds: float | None) -> float | None:
            return None if seconds is None else seconds * 1e3
        host, joins = mean(self._host_s), mean(self._join_s)
        return BatchSteps(steps=self.steps, slots=slots, captured=captured,
                          running=mean(self._running), rows=mean(self._rows),
                          host_ms=ms(None if host is None else host + (joins or 0.0)),
                          period_ms=ms(mean(self._period_s)), on_gpu=on_gpu, join_ms=ms(joins))
