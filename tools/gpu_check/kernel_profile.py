"""Kernels a decode step launches on the GPU and their time, read with torch.profiler (CUPTI:
a kernel inside a replayed CUDA graph is counted as the kernel it is), and the floor one kernel
costs on this device: the two bounds a small batch-1 step sits between are its bytes (the HBM
roofline) and its kernel count (kernels × the per-kernel floor)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable

import torch


@dataclass(frozen=True)
class KernelProfile:
    kernels: int            # kernels launched over the profiled call
    kernel_ms: float        # their summed GPU time
    wall_ms: float          # the call's wall time, synchronised

    def per(self, count: int) -> tuple[float, float]:
        """(kernels, kernel ms) per unit, e.g. per generated token."""
        return self.kernels / count, self.kernel_ms / count


def profile_kernels(call: Callable[[], object]) -> KernelProfile:
    from torch.profiler import ProfilerActivity, profile
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        start = time.perf_counter()
        call()
        torch.cuda.synchronize()
        wall = time.perf_counter() - start
    kernels = [e for e in prof.events() if _is_kernel(e)]
    gpu_us = sum(_device_us(e) for e in kernels)
    return KernelProfile(len(kernels), gpu_us / 1e3, wall * 1e3)


def _is_kernel(event) -> bool:
    device_type = getattr(event, "device_type", None)
    return device_type is not None and device_type.name == "CUDA" and not getattr(
        event, "is_user_annotation", False)


def _device_us(event) -> float:
    for name in ("device_time", "cuda_time", "self_device_time_total"):
        value = getattr(event, name, None)
        if isinstance(value, (int, float)) and value:
            return float(value)
    return 0.0


def kernel_floor_us(kernels: int = 2000) -> float:
    """The GPU time per kernel of a CUDA graph of `kernels` one-element adds, replayed: what a
    kernel costs on this device when launching costs the host nothing."""
    x = torch.zeros(1, device="cuda")
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(3):
            x.add_(1)
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(kernels):
            x.add_(1)
    graph.replay()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(5):
        graph.replay()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) * 1e3 / (5 * kernels)


def closer_bound(ms_per_token: float, roofline_ms: float, kernels_per_token: float,
                 floor_us: float) -> str:
    """Which floor a step's time is nearer to, as a ratio: "bytes" when the HBM roofline is the
    larger floor, "kernels" when kernels × the per-kernel floor is."""
    kernel_ms = kernels_per_token * floor_us / 1e3
    return "kernels" if kernel_ms >= roofline_ms else "bytes"
