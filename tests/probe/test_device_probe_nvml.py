"""The NVML path of the device probe, against a fake pynvml (no GPU here): real values come
through as they are, and every NVMLError kind becomes N/A (None), never an exception."""

from __future__ import annotations

from types import SimpleNamespace

import pynvml
import pytest
import torch

import probe.engine.observe.device_probe as device_probe
from probe.engine.observe.device_probe import DeviceProbe

GiB = 2**30
ERRORS = ["NVML_ERROR_NOT_SUPPORTED", "NVML_ERROR_GPU_IS_LOST", "NVML_ERROR_NO_PERMISSION",
          "NVML_ERROR_UNKNOWN", "NVML_ERROR_TIMEOUT"]
QUERIES = ["nvmlDeviceGetUtilizationRates", "nvmlDeviceGetMemoryInfo",
           "nvmlDeviceGetPowerUsage", "nvmlDeviceGetTemperature"]


def fake_nvml(fail: dict[str, int] | None = None, init_error: int | None = None):
    fail = fail or {}

    def query(name, value):
        def call(*args):
            if name in fail:
                raise pynvml.NVMLError(fail[name])
            return value
        return call

    def init():
        if init_error is not None:
            raise pynvml.NVMLError(init_error)

    return SimpleNamespace(
        nvmlInit=init, NVML_TEMPERATURE_GPU=0,
        nvmlDeviceGetHandleByIndex=query("nvmlDeviceGetHandleByIndex", "handle-0"),
        nvmlDeviceGetUtilizationRates=query("nvmlDeviceGetUtilizationRates",
                                            SimpleNamespace(gpu=73, memory=40)),
        nvmlDeviceGetMemoryInfo=query("nvmlDeviceGetMemoryInfo", SimpleNamespace(
            total=141 * GiB, free=100 * GiB, used=41 * GiB)),
        nvmlDeviceGetPowerUsage=query("nvmlDeviceGetPowerUsage", 312_500),   # milliwatts
        nvmlDeviceGetTemperature=query("nvmlDeviceGetTemperature", 54))


@pytest.fixture
def gpu(monkeypatch):
    """A pretend CUDA device for the torch calls the probe makes besides NVML."""
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda device=None: "NVIDIA H200")
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    monkeypatch.setattr(torch.cuda, "memory_allocated", lambda device=None: 3 * GiB)
    monkeypatch.setattr(torch.cuda, "memory_reserved", lambda device=None: 4 * GiB)
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda device=None: (90 * GiB, 141 * GiB))

    def install(nvml):
        monkeypatch.setattr(device_probe, "pynvml", nvml)
        monkeypatch.setattr(device_probe, "_nvml_ready", None)
        return DeviceProbe(torch.device("cuda:0")).sample()
    return install


def test_real_values_come_through_in_their_units(gpu):
    sample = gpu(fake_nvml())
    assert (sample.kind, sample.name) == ("GPU", "NVIDIA H200")
    assert sample.util_pct == 73.0
    assert (sample.mem_used_bytes, sample.mem_free_bytes, sample.mem_total_bytes) == (
        41 * GiB, 100 * GiB, 141 * GiB)
    assert sample.power_w == pytest.approx(312.5)
    assert sample.temperature_c == 54.0
    assert (sample.torch_allocated_bytes, sample.torch_reserved_bytes) == (3 * GiB, 4 * GiB)


@pytest.mark.parametrize("error", ERRORS)
@pytest.mark.parametrize("query", QUERIES)
def test_each_nvml_error_kind_is_not_available(gpu, query, error):
    sample = gpu(fake_nvml({query: getattr(pynvml, error)}))
    field = {"nvmlDeviceGetUtilizationRates": "util_pct", "nvmlDeviceGetPowerUsage": "power_w",
             "nvmlDeviceGetTemperature": "temperature_c"}.get(query)
    if field:
        assert getattr(sample, field) is None
    else:   # memory falls back to torch's own reading of the device
        assert (sample.mem_free_bytes, sample.mem_total_bytes) == (90 * GiB, 141 * GiB)
    assert sample.util_pct is None or sample.util_pct == 73.0


@pytest.mark.parametrize("error", ["NVML_ERROR_DRIVER_NOT_LOADED", "NVML_ERROR_LIBRARY_NOT_FOUND"])
def test_nvml_that_cannot_start_leaves_every_nvml_figure_not_available(gpu, error):
    sample = gpu(fake_nvml(init_error=getattr(pynvml, error)))
    assert (sample.util_pct, sample.power_w, sample.temperature_c) == (None, None, None)
    assert sample.mem_total_bytes == 141 * GiB          # from torch


def test_the_probe_reads_version_two_memory_and_the_samples_window(gpu):
    """Where NVML has them: memory as nvidia-smi reads it (reserved apart) and utilization
    averaged over the samples since the last reading, not the one-instant rate."""
    nvml = fake_nvml()
    nvml.nvmlMemory_v2 = 0x02000028
    nvml.NVML_GPU_UTILIZATION_SAMPLES = 1
    v2 = SimpleNamespace(total=141 * GiB, free=100 * GiB, used=40 * GiB, reserved=GiB)
    nvml.nvmlDeviceGetMemoryInfo = lambda handle, version=None: (
        v2 if version == 0x02000028 else SimpleNamespace(total=141 * GiB, free=100 * GiB,
                                                         used=41 * GiB))
    samples = [SimpleNamespace(timeStamp=t, sampleValue=SimpleNamespace(uiVal=v))
               for t, v in ((10, 20), (20, 40), (30, 60))]
    nvml.nvmlDeviceGetSamples = lambda handle, kind, since: (1, samples)
    sample = gpu(nvml)
    assert sample.util_pct == 40.0                      # not the instant's 73
    assert (sample.mem_used_bytes, sample.mem_reserved_bytes) == (40 * GiB, GiB)
