"""When GPU work finished, without making the host wait for it.

A continuous-batching loop that synchronises the device after every step leaves the GPU idle
while the host does its bookkeeping. Here each step records a mark instead (a CUDA event), the
host runs ahead by a few steps, and a mark's wall time is read once the GPU has passed it: the
event's elapsed time from an anchor event whose wall time is known. Tokens are copied to
pinned host memory behind the step that made them and read when their copy's mark has passed.
On a CPU the work is done when the call returns: every mark is ready at once.

`waits` counts the times the host blocked on the device: what the scheduler's tests count.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Protocol

import torch


class Mark(Protocol):
    def ready(self) -> bool: ...


@dataclass(frozen=True)
class HostMark:
    at: float

    def ready(self) -> bool:
        return True


class CudaMark:
    def __init__(self) -> None:
        self.event = torch.cuda.Event(enable_timing=True)
        self.event.record()

    def ready(self) -> bool:
        return self.event.query()


class Fetch:
    """Device values on their way to the host: `values()` once its mark is ready."""

    def __init__(self, host: torch.Tensor, mark: Mark) -> None:
        self._host, self.mark = host, mark

    def values(self) -> list[int]:
        return self._host.tolist()


class Timeline:
    """A CPU's: work is finished when the call that queued it returns."""

    def __init__(self) -> None:
        self.waits = 0

    def mark(self) -> Mark:
        return HostMark(time.perf_counter())

    def wait(self, mark: Mark) -> None:
        if not mark.ready():
            self.waits += 1

    def seconds(self, mark: Mark) -> float:
        """perf_counter() at which the work before `mark` had finished."""
        assert isinstance(mark, HostMark)
        return mark.at

    def fetch(self, values: torch.Tensor) -> Fetch:
        return Fetch(values.clone(), self.mark())


class CudaTimeline(Timeline):
    def __init__(self, device: torch.device) -> None:
        super().__init__()
        self.device = device
        torch.cuda.synchronize(device)
        self._anchor = CudaMark()
        self._anchor.event.synchronize()
        self._anchor_s = time.perf_counter()

    def mark(self) -> Mark:
        return CudaMark()

    def wait(self, mark: Mark) -> None:
        assert isinstance(mark, CudaMark)
        if not mark.ready():
            self.waits += 1
            mark.event.synchronize()

    def seconds(self, mark: Mark) -> float:
        assert isinstance(mark, CudaMark)
        self.wait(mark)
        return self._anchor_s + self._anchor.event.elapsed_time(mark.event) / 1e3

    def fetch(self, values: torch.Tensor) -> Fetch:
        host = torch.empty(values.shape, dtype=values.dtype, pin_memory=True)
        host.copy_(values, non_blocking=True)
        return Fetch(host, self.mark())


def timeline_for(device: torch.device) -> Timeline:
    return CudaTimeline(device) if device.type == "cuda" else Timeline()
