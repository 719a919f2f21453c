"""How busy the device was over a run, sampled in a thread twice a second and averaged: on a
GPU, NVML's utilization (each reading already a mean over the driver's samples since the last
one, probe/engine/observe/nvml_figures.py); on a CPU, the engine process's share of the
machine's cores (a CPU has no utilization of its own to read: the whole machine's includes
every other process). What E7's slot sweep reports beside each slot count's throughput."""

from __future__ import annotations

import threading
from types import TracebackType
from typing import TYPE_CHECKING

from probe.contract.device_sample import DeviceSample

if TYPE_CHECKING:
    import torch

EVERY_S = 0.5


def busy_pct(sample: DeviceSample) -> float | None:
    """One reading: the GPU's utilization, or the engine's CPU over all the machine's cores."""
    if sample.kind == "GPU":
        return sample.util_pct
    if sample.process_cpu_pct is None or not sample.cpu_cores:
        return None
    return sample.process_cpu_pct / sample.cpu_cores


def busy_source(device_type: str) -> str:
    return ("NVML GPU utilization" if device_type == "cuda"
            else "the engine process's CPU over the machine's cores")


class DeviceBusy:
    """`with DeviceBusy(device) as busy: …` then `busy.mean_pct` (None: no reading)."""

    def __init__(self, device: torch.device, every_s: float = EVERY_S) -> None:
        # here, not at the top: openloop.py imports this module on the command line's path
        # (doctor --verify), which must not load torch
        from probe.engine.observe.device_probe import DeviceProbe
        self._probe = DeviceProbe(device)
        self._every_s = every_s
        self._stop = threading.Event()
        self._readings: list[float] = []
        self._thread = threading.Thread(target=self._sample, daemon=True,
                                        name="infertop-device-busy")

    def _sample(self) -> None:
        self._read()            # the first reading only starts the CPU and NVML windows
        while not self._stop.wait(self._every_s):
            value = self._read()
            if value is not None:
                self._readings.append(value)

    def _read(self) -> float | None:
        try:
            return busy_pct(self._probe.sample())
        except Exception:  # a reading that fails is left out, the run goes on
            return None

    def __enter__(self) -> DeviceBusy:
        self._thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self._stop.set()
        self._thread.join()

    @property
    def mean_pct(self) -> float | None:
        return sum(self._readings) / len(self._readings) if self._readings else None
