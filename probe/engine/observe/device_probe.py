"""Device load: NVML through pynvml on a GPU, psutil on a CPU. Every NVML call goes through
`nvml_query`, which turns any NVML failure into None (shown as N/A), never an exception."""

from __future__ import annotations

import threading
from typing import Any, Callable

import psutil
import torch

from probe.checks.engine_inputs import check_device
from probe.common.errors import BadInput
from probe.contract.device_sample import DeviceSample
from probe.engine.observe.cuda_graphs import census
from probe.engine.observe.energy_counter import EnergyCounter, Unavailable, open_counter
from probe.engine.observe.nvml_figures import memory_figures, utilization_window
from probe.engine.observe.process_tree_cpu import TreeCpuMeter

try:
    import pynvml
except ImportError:  # nvidia-ml-py is a dependency, but a broken install must not crash us
    pynvml = None

_nvml_lock = threading.Lock()
_nvml_ready: bool | None = None


def nvml_query(fn: Callable[..., Any], *args: Any) -> Any:
    """Call an NVML function; None when NVML, the driver or the query is not available."""
    global _nvml_ready
    if pynvml is None:
        return None
    with _nvml_lock:
        if _nvml_ready is None:
            try:
                pynvml.nvmlInit()
                _nvml_ready = True
            except Exception:
                _nvml_ready = False
        if not _nvml_ready:
            return None
    try:
        return fn(*args)
    except Exception:
        return None


class DeviceProbe:
    def __init__(self, device: torch.device) -> None:
        self.device = device
        self._process = psutil.Process()
        self._cpu = TreeCpuMeter(self._process)
        self._handle = None
        self._util_since_us = 0
        if device.type == "cuda" and pynvml is not None:
            index = device.index if device.index is not None else torch.cuda.current_device()
            self._handle = nvml_query(pynvml.nvmlDeviceGetHandleByIndex, index)

    def energy_counter(self) -> EnergyCounter | Unavailable:
        """NVML's energy counter for this GPU (NVML opened as every other query opens it), or
        RAPL's for a CPU; Unavailable says why not."""
        if self.device.type == "cuda":
            ready = pynvml is not None and nvml_query(lambda: True) is not None
            return open_counter("cuda", pynvml if ready else None, self._handle)
        return open_counter(self.device.type)

    def sample(self) -> DeviceSample:
        """Each reading covers the time since the previous one (psutil's interval=None)."""
        if self.device.type == "cuda":
            return self._gpu()
        memory = psutil.virtual_memory()
        machine_pct, engine_pct = self._cpu.percents()
        return DeviceSample(kind="CPU", name=f"{psutil.cpu_count()} cores",
                            util_pct=machine_pct,
                            mem_used_bytes=self._process.memory_info().rss,
                            mem_total_bytes=memory.total, mem_free_bytes=memory.available,
                            process_cpu_pct=engine_pct, cpu_cores=psutil.cpu_count())

    def _gpu(self) -> DeviceSample:
        handle = self._handle
        name = torch.cuda.get_device_name(self.device)
        util = self._utilization() if handle else None
        memory = self._memory() if handle else None
        power = nvml_query(pynvml.nvmlDeviceGetPowerUsage, handle) if handle else None
        temperature = (nvml_query(pynvml.nvmlDeviceGetTemperature, handle,
                                  pynvml.NVML_TEMPERATURE_GPU) if handle else None)
        reserved = None
        if memory is None:
            free, total = torch.cuda.mem_get_info(self.device)
            used = total - free
        else:
            figures = memory_figures(memory)
            free, total, used = figures.free_bytes, figures.total_bytes, figures.used_bytes
            reserved = figures.reserved_bytes
        graphs = census(self.device)
        return DeviceSample(
            kind="GPU", name=name, util_pct=util,
            cuda_graphs=None if graphs is None else graphs.graphs,
            cuda_graph_bytes=None if graphs is None else graphs.pool_bytes,
            mem_used_bytes=used, mem_total_bytes=total, mem_free_bytes=free,
            mem_reserved_bytes=reserved,
            power_w=None if power is None else power / 1000.0,
            temperature_c=None if temperature is None else float(temperature),
            torch_allocated_bytes=torch.cuda.memory_allocated(self.device),
            torch_reserved_bytes=torch.cuda.memory_reserved(self.device),
            process_cpu_pct=self._cpu.percents()[1])

    def _memory(self) -> Any:
        """nvidia-smi's reading (version 2); the version-1 call where v2 is missing."""
        version = getattr(pynvml, "nvmlMemory_v2", None)
        if version is not None:
            info = nvml_query(lambda: pynvml.nvmlDeviceGetMemoryInfo(self._handle,
                                                                      version=version))
            if info is not None:
                return info
        return nvml_query(pynvml.nvmlDeviceGetMemoryInfo, self._handle)

    def _utilization(self) -> float | None:
        """The mean since the previous reading; one instant where samples are unsupported."""
        answer = nvml_query(lambda: pynvml.nvmlDeviceGetSamples(
            self._handle, pynvml.NVML_GPU_UTILIZATION_SAMPLES, self._util_since_us))
        if answer is not None:
            window = utilization_window(answer[1], self._util_since_us)
            if window.mean_pct is not None:
                self._util_since_us = window.last_timestamp_us
                return window.mean_pct
        rates = nvml_query(pynvml.nvmlDeviceGetUtilizationRates, self._handle)
        return None if rates is None else float(rates.gpu)


def resolve_device(name: str) -> torch.device:
    check_device(name)
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    device = torch.device(name)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise BadInput(f"--device {name}: no CUDA device is available here; use cpu or auto")
    if device.type == "cuda" and (device.index or 0) >= torch.cuda.device_count():
        raise BadInput(f"--device {name}: this machine has {torch.cuda.device_count()} CUDA "
                          f"device(s), numbered from 0")
    return device
