"""Whether the figures can be trusted right now: the offered load near the live capacity
(`NEAR_CAPACITY`, against load_figures' `Load.share`: the calibration's 50% is measured once;
the machine and the config change), and contention —
the machine's CPU busy beyond the engine's own share (another process takes the cores the
engine's threads wait on: on two cores that doubles a token's time)."""

from __future__ import annotations

from dataclasses import dataclass

from probe.contract.device_sample import DeviceSample

CONTENTION_CORES = 0.5      # other processes' CPU, in cores, above which figures are unreliable
NEAR_CAPACITY = 0.9         # offered / capacity above which the queue is about to grow


@dataclass(frozen=True)
class Contention:
    others_cores: float      # the machine's busy cores minus the engine's
    cores: int


def contention(sample: DeviceSample | None) -> Contention | None:
    """Other processes' CPU beyond CONTENTION_CORES, on a CPU engine; None otherwise (or when
    a figure is missing)."""
    if (sample is None or sample.kind != "CPU" or sample.util_pct is None
            or sample.process_cpu_pct is None or not sample.cpu_cores):
        return None
    others = sample.util_pct / 100 * sample.cpu_cores - sample.process_cpu_pct / 100
    return Contention(others, sample.cpu_cores) if others > CONTENTION_CORES else None
