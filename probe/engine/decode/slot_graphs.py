"""CUDA graphs of the continuous-batching step, one per padded batch size, as vLLM captures
them: a ladder 1, 2, 4, 8, … up to the slot count. A step over n occupied slots replays the
graph of the smallest size that holds the highest occupied slot (joins take the lowest free
slot, so that is about n). Each graph runs the whole step over the first `rows` slots' views
of the batcher's tensors (fixed addresses): bias and mask, the decoder, the token written
into `generated`, positions advanced; replaying it costs the host one call.

The graphs hold the model's eager kernels: a capture per size costs milliseconds, where an
inductor compile per size costs 15–30 s on the GPU's host (fusing them, inductor with a
dynamic batch dimension captured per size, is the next step). Captured up front, all slots
free, the largest first so the smaller ones reuse its memory in the shared pool.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable

import torch

from probe.engine.observe import cuda_graphs


def ladder(slots: int) -> tuple[int, ...]:
    """1, 2, 4, … below `slots`, then `slots` itself."""
    sizes, size = [], 1
    while size < slots:
        sizes.append(size)
        size *= 2
    return (*sizes, slots)


def rows_for(highest_occupied: int, sizes: tuple[int, ...]) -> int:
    """The smallest size of the ladder that holds slot `highest_occupied` (0-based)."""
    return next((size for size in sizes if size > highest_occupied), sizes[-1])


@dataclass(frozen=True)
class Capture:
    rows: int
    seconds: float


class SlotGraphs:
    def __init__(self, sizes: tuple[int, ...], step_for: Callable[[int], Callable[[], None]],
                 device: torch.device) -> None:
        """`step_for(rows)`: the step over the first `rows` slots (its views made once)."""
        self.sizes = sizes
        self.captures: list[Capture] = []
        self._graphs: dict[int, torch.cuda.CUDAGraph] = {}
        pool = torch.cuda.graph_pool_handle()
        for rows in sorted(sizes, reverse=True):
            step = step_for(rows)
            started = time.perf_counter()
            side = torch.cuda.Stream(device)
            side.wait_stream(torch.cuda.current_stream(device))
            with torch.cuda.stream(side):      # warm-up: cuBLAS handles, kernel choices
                step()
            torch.cuda.current_stream(device).wait_stream(side)
            graph = torch.cuda.CUDAGraph()
            # thread_local: the dashboard's sampler thread may read the device meanwhile
            with torch.cuda.graph(graph, pool=pool, capture_error_mode="thread_local"):
                step()
            self._graphs[rows] = graph
            self.captures.append(Capture(rows, time.perf_counter() - started))
        torch.cuda.synchronize(device)
        cuda_graphs.register(self, pool, len(self._graphs))

    def __del__(self) -> None:
        cuda_graphs.forget(self)

    def replay(self, rows: int) -> None:
        self._graphs[rows].replay()

    @property
    def seconds(self) -> float:
        return sum(c.seconds for c in self.captures)
