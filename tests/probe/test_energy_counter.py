"""The energy counters on a fake powercap tree (tmp_path) and on recorded NVML answers through a
fake pynvml: wrap-around, a missing counter, unreadable files, a counter that stops moving."""

from __future__ import annotations

from pathlib import Path

import pytest

from probe.engine.observe.energy_counter import (
    EnergyReading,
    NvmlEnergy,
    Unavailable,
    open_counter,
    open_rapl,
)


def zone(root: Path, name: str, domain: str, uj: int | None, range_uj: int = 1000_000) -> Path:
    path = root / name
    path.mkdir(parents=True)
    (path / "name").write_text(domain + "\n")
    if uj is not None:
        (path / "energy_uj").write_text(f"{uj}\n")
        (path / "max_energy_range_uj").write_text(f"{range_uj}\n")
    return path


def ticking(start: float = 0.0, step: float = 1.0):
    t = [start]

    def clock() -> float:
        t[0] += step
        return t[0]
    return clock


def test_rapl_adds_package_and_dram_and_undoes_a_wrap(tmp_path: Path) -> None:
    package = zone(tmp_path, "intel-rapl:0", "package-0", 900_000, range_uj=1_000_000)
    dram = zone(tmp_path, "intel-rapl:0:0", "dram", 10)
    zone(tmp_path, "intel-rapl:0:1", "core", 5)         # inside package: not added again
    counter = open_rapl(tmp_path, ticking())
    assert not isinstance(counter, Unavailable)
    assert counter.source == "RAPL package-0+dram"
    first = counter.read()
    assert isinstance(first, EnergyReading) and first.joules_total == 0.0
    # package wraps: 900,000 → (range) → 100,000 is 200,000 µJ; dram moves 2,000,010 − 10
    (package / "energy_uj").write_text("100000\n")
    (dram / "energy_uj").write_text("2000010\n")
    second = counter.read()
    assert isinstance(second, EnergyReading)
    assert second.joules_total == pytest.approx(0.2 + 2.0)
    assert second.t_s > first.t_s


def test_amd_rapl_zones_are_read_too(tmp_path: Path) -> None:
    zone(tmp_path, "amd-rapl:0", "package-0", 0)
    counter = open_rapl(tmp_path)
    assert not isinstance(counter, Unavailable)
    assert counter.source == "RAPL package-0"


def test_a_counter_that_stops_moving_reads_zero_joules_not_an_error(tmp_path: Path) -> None:
    zone(tmp_path, "intel-rapl:0", "package-0", 5_000_000)
    counter = open_rapl(tmp_path)
    assert not isinstance(counter, Unavailable)
    readings = [counter.read() for _ in range(3)]
    assert [r.joules_total for r in readings if isinstance(r, EnergyReading)] == [0.0] * 3


def test_no_powercap_is_a_reason_never_a_number(tmp_path: Path) -> None:
    answer = open_rapl(tmp_path / "absent")
    assert isinstance(answer, Unavailable)
    assert "does not exist" in answer.reason
    assert answer.text().startswith("energy: not measurable here (")


def test_zones_without_a_counter_are_a_reason(tmp_path: Path) -> None:
    zone(tmp_path, "intel-rapl:0", "package-0", None)        # energy_uj missing
    answer = open_rapl(tmp_path)
    assert isinstance(answer, Unavailable)
    assert "no RAPL package or dram counter" in answer.reason


def test_an_unreadable_counter_is_a_reason_not_a_crash(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    path = zone(tmp_path, "intel-rapl:0", "package-0", 7)
    read_text = Path.read_text

    def as_a_user(self: Path, *args: object, **kwargs: object) -> str:
        """energy_uj is root-only from kernel 5.10; these tests run as root, so the refusal
        a user meets is played here."""
        if self == path / "energy_uj":
            raise PermissionError(13, "Permission denied", str(self))
        return read_text(self, *args, **kwargs)   # type: ignore[arg-type]

    monkeypatch.setattr(Path, "read_text", as_a_user)
    answer = open_rapl(tmp_path)
    assert isinstance(answer, Unavailable)
    assert "root only" in answer.reason


def test_a_counter_unreadable_after_opening_is_a_reason(tmp_path: Path) -> None:
    path = zone(tmp_path, "intel-rapl:0", "package-0", 7)
    counter = open_rapl(tmp_path)
    assert not isinstance(counter, Unavailable)
    (path / "energy_uj").unlink()
    answer = counter.read()
    assert isinstance(answer, Unavailable) and "unreadable" in answer.reason


class FakeNvml:
    """pynvml answering from recorded values (mJ for the counter, mW for power)."""

    def __init__(self, energy_mj: list[int] | None, power_mw: list[int] | None = None):
        self.energy_mj, self.power_mw = energy_mj, power_mw

    def nvmlDeviceGetTotalEnergyConsumption(self, handle: object) -> int:
        if self.energy_mj is None:
            raise RuntimeError("NVML_ERROR_NOT_SUPPORTED")
        return self.energy_mj.pop(0) if len(self.energy_mj) > 1 else self.energy_mj[0]

    def nvmlDeviceGetPowerUsage(self, handle: object) -> int:
        if self.power_mw is None:
            raise RuntimeError("NVML_ERROR_NOT_SUPPORTED")
        return self.power_mw.pop(0) if len(self.power_mw) > 1 else self.power_mw[0]


def test_nvml_counter_is_read_in_joules_since_opening() -> None:
    # recorded on an H100: mJ since the driver loaded
    nvml = FakeNvml([81_234_567_000, 81_234_567_000, 81_234_667_500, 81_235_067_500])
    counter = NvmlEnergy(nvml, handle="gpu0", clock=ticking())
    assert counter.source == "NVML energy counter"
    joules = [r.joules_total for r in (counter.read(), counter.read(), counter.read())
              if isinstance(r, EnergyReading)]
    assert joules == pytest.approx([0.0, 100.5, 500.5])


def test_nvml_without_the_counter_integrates_power_and_says_so() -> None:
    nvml = FakeNvml(None, power_mw=[100_000, 300_000, 300_000])
    counter = NvmlEnergy(nvml, handle="gpu0", clock=ticking(step=2.0))
    assert counter.source == "NVML integrated power"
    joules = [r.joules_total for r in (counter.read(), counter.read(), counter.read())
              if isinstance(r, EnergyReading)]
    assert joules == pytest.approx([0.0, 2 * (100 + 300) / 2, 400 + 2 * 300])


def test_nvml_with_neither_is_unavailable() -> None:
    answer = open_counter("cuda", FakeNvml(None, None), "gpu0")
    assert isinstance(answer, Unavailable) and "neither" in answer.reason
    assert isinstance(open_counter("cuda", None, None), Unavailable)
