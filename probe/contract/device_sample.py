"""One reading of the device's load: a plain value, importable without torch."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class DeviceSample:
    kind: str                           # "GPU" | "CPU"
    name: str
    util_pct: float | None              # GPU utilisation, or the whole machine's CPU %
    mem_used_bytes: int | None          # GPU memory used, or the engine process's RSS
    mem_total_bytes: int | None
    mem_free_bytes: int | None          # what KV headroom is computed against
    power_w: float | None = None
    temperature_c: float | None = None
    torch_allocated_bytes: int | None = None
    torch_reserved_bytes: int | None = None
    # the engine's CPU % (100 = one core busy): its process and the processes it started (the
    # compile workers and the C++ compiler, where a CPU compile spends much of its time)
    process_cpu_pct: float | None = None
    cpu_cores: int | None = None        # logical CPUs: what util_pct's 100% is
    # GPU memory the driver reserved (NVML v2), not counted in mem_used_bytes, as nvidia-smi
    mem_reserved_bytes: int | None = None
    cuda_graphs: int | None = None          # CUDA graphs captured (inductor's and infertop's)
    cuda_graph_bytes: int | None = None     # what their memory pools hold
