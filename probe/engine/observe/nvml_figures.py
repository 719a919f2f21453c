"""What NVML answers, read the way nvidia-smi reads it: pure functions over NVML's answers, so
they are tested on recorded answers without a GPU.

- Memory: `nvmlDeviceGetMemoryInfo(handle, version=nvmlMemory_v2)`, whose `used` is what
  nvidia-smi prints (driver 510 on). The version-1 call counts the driver's reserved memory as
  used: on an idle H200 it read 618 MiB where nvidia-smi read 4 MiB. Reserved is kept apart.
- Utilization: the mean of `nvmlDeviceGetSamples(..., NVML_GPU_UTILIZATION_SAMPLES, since)`
  over the samples the driver took since the previous reading (about six a second), so the
  panel's figure covers its window; `nvmlDeviceGetUtilizationRates` is one instant and is the
  fallback where samples are not supported.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence


@dataclass(frozen=True)
class MemoryFigures:
    used_bytes: int
    total_bytes: int
    free_bytes: int
    reserved_bytes: int | None      # the driver's; None from the version-1 call


def memory_figures(info: Any) -> MemoryFigures:
    """From an nvmlMemory_v2 answer (has `reserved`) or a version-1 one (used then includes
    what the driver reserved: we cannot split it, and say so with reserved=None)."""
    reserved = getattr(info, "reserved", None)
    return MemoryFigures(used_bytes=int(info.used), total_bytes=int(info.total),
                         free_bytes=int(info.free),
                         reserved_bytes=None if reserved is None else int(reserved))


@dataclass(frozen=True)
class UtilizationWindow:
    mean_pct: float | None
    samples: int
    last_timestamp_us: int          # where the next reading starts


def utilization_window(samples: Sequence[Any], since_us: int) -> UtilizationWindow:
    """The mean GPU utilization of NVML's samples newer than `since_us` (each has `timeStamp`
    in µs and `sampleValue.uiVal` in percent)."""
    fresh = [(int(s.timeStamp), float(s.sampleValue.uiVal)) for s in samples
             if int(s.timeStamp) > since_us]
    if not fresh:
        return UtilizationWindow(None, 0, since_us)
    return UtilizationWindow(sum(v for _, v in fresh) / len(fresh), len(fresh),
                             max(t for t, _ in fresh))
