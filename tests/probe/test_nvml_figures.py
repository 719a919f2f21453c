"""NVML read as nvidia-smi reads it, from NVML answers recorded on an H200 (2026-12-04, driver
580.159.04): version-2 memory info splits the driver's reservation from `used`, and
utilization is the mean of the samples since the last reading."""

from __future__ import annotations

from types import SimpleNamespace

from probe.engine.observe.nvml_figures import memory_figures, utilization_window

MiB = 2**20


def test_version_two_memory_is_what_nvidia_smi_prints():
    # idle H200: nvidia-smi said used 4 MiB, reserved 616 MiB; the v1 call said used 618 MiB
    v2 = SimpleNamespace(total=143771 * MiB, reserved=615 * MiB, free=143153 * MiB,
                         used=3 * MiB + MiB // 4, version=2)
    figures = memory_figures(v2)
    assert abs(figures.used_bytes / MiB - 4.0) < 1.0
    assert figures.reserved_bytes == 615 * MiB
    v1 = SimpleNamespace(total=143771 * MiB, free=143153 * MiB, used=618 * MiB)
    assert memory_figures(v1).reserved_bytes is None         # cannot be split: said so


def sample(timestamp_us: int, percent: int):
    return SimpleNamespace(timeStamp=timestamp_us, sampleValue=SimpleNamespace(uiVal=percent))


def test_utilization_is_the_mean_of_the_window_not_one_instant():
    samples = [sample(1_000, 90), sample(167_000, 10), sample(333_000, 20), sample(500_000, 0)]
    window = utilization_window(samples, since_us=100_000)
    assert window.samples == 3 and window.mean_pct == 10.0
    assert window.last_timestamp_us == 500_000
    again = utilization_window(samples, since_us=window.last_timestamp_us)
    assert again.mean_pct is None and again.last_timestamp_us == 500_000
