"""The device's energy counter, read: `open_counter(device)` gives an `EnergyCounter` whose
`read()` is an `EnergyReading` (joules since the counter was opened, monotonic, and when), or
an `Unavailable` that says why. A counter is read, never estimated from power where one exists.

- GPU: NVML's `nvmlDeviceGetTotalEnergyConsumption` (mJ since the driver loaded; Volta on).
  Where the GPU has no such counter, the board power (`nvmlDeviceGetPowerUsage`) integrated
  between readings, and the source says "integrated power".
- CPU: RAPL through powercap, /sys/class/powercap/intel-rapl:*/energy_uj (package and dram
  domains; AMD's EPYC drivers name theirs intel-rapl or amd-rapl alike), each domain's wrap
  at max_energy_range_uj handled. A file we may not read (kernel ≥ 5.10 makes energy_uj
  root-only) is a reason, not a crash.
- Neither (most VMs): Unavailable("no RAPL counter: ...").

Why not ML.ENERGY's zeus (0.16, tried): its device layer does read these same counters
(`zeus.device.get_gpus().getTotalEnergyConsumption`, RAPL through `get_cpus()`), but the
package requires pandas, scikit-learn, pydantic, httpx, rich, tyro and amdsmi: 423 MB of
site-packages in a fresh venv, and `import zeus.monitor` took 3.15 s on this 2-core VM (its
`ZeusMonitor` measures begin/end windows, not the per-step readings the ledger needs). The
two counters are a handful of reads, written here so a step costs one NVML call or a few
small file reads, and the default install stays as it is.
"""

from __future__ import annotations

import contextvars
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Protocol

POWERCAP = Path("/sys/class/powercap")
RAPL_PREFIXES = ("intel-rapl:", "amd-rapl:")
RAPL_DOMAINS = ("package", "dram")        # `core`/`uncore` sit inside package: not added


@dataclass(frozen=True)
class EnergyReading:
    joules_total: float         # since the counter was opened; never goes down
    t_s: float                  # time.perf_counter() when read


@dataclass(frozen=True)
class Unavailable:
    reason: str

    def text(self) -> str:
        return f"energy: not measurable here ({self.reason})"


class EnergyCounter(Protocol):
    source: str                 # "NVML energy counter", "RAPL package-0+dram-0", …

    def read(self) -> EnergyReading | Unavailable: ...


class NvmlEnergy:
    """NVML's energy counter of one GPU (mJ since the driver loaded), or the board power
    integrated between readings where the counter is absent (the source says so)."""

    def __init__(self, nvml: Any, handle: Any, clock: Callable[[], float] = time.perf_counter):
        self._nvml, self._handle, self._clock = nvml, handle, clock
        self._counter = _query(nvml.nvmlDeviceGetTotalEnergyConsumption, handle) is not None
        self.source = "NVML energy counter" if self._counter else "NVML integrated power"
        self._first_mj: float | None = None
        self._integrated_j = 0.0
        self._last: tuple[float, float] | None = None    # (t_s, W) of the previous reading

    def read(self) -> EnergyReading | Unavailable:
        now = self._clock()
        if self._counter:
            mj = _query(self._nvml.nvmlDeviceGetTotalEnergyConsumption, self._handle)
            if mj is None:
                return Unavailable("NVML stopped answering the energy counter")
            if self._first_mj is None:
                self._first_mj = float(mj)
            return EnergyReading((float(mj) - self._first_mj) / 1000.0, now)
        mw = _query(self._nvml.nvmlDeviceGetPowerUsage, self._handle)
        if mw is None:
            return Unavailable("this GPU reports neither an energy counter nor its power")
        watts = float(mw) / 1000.0
        if self._last is not None:      # trapezoid between the two readings
            self._integrated_j += (now - self._last[0]) * (watts + self._last[1]) / 2
        self._last = (now, watts)
        return EnergyReading(self._integrated_j, now)


@dataclass
class _Domain:
    path: Path                  # the energy_uj file
    range_uj: int               # max_energy_range_uj: where the counter wraps to 0
    last_uj: int
    name: str


class RaplEnergy:
    """The package and dram domains of every RAPL zone under `root`, added up; each domain's
    wrap-around at max_energy_range_uj is undone between two readings (a wrap between two
    readings further apart than one range, ~minutes at full load, cannot be seen)."""

    def __init__(self, domains: list[_Domain], clock: Callable[[], float] = time.perf_counter):
        self._domains, self._clock = domains, clock
        self._joules = 0.0
        self.source = "RAPL " + "+".join(d.name for d in domains)

    def read(self) -> EnergyReading | Unavailable:
        now = self._clock()
        for domain in self._domains:
            try:
                uj = int(domain.path.read_text().strip())
            except (OSError, ValueError) as exc:
                return Unavailable(f"{domain.path} became unreadable: {exc}")
            delta = uj - domain.last_uj
            if delta < 0:               # wrapped to 0 at range_uj
                delta += domain.range_uj
            domain.last_uj = uj
            self._joules += delta / 1e6
        return EnergyReading(self._joules, now)


def _zones(root: Path) -> Iterator[Path]:
    """Every RAPL zone and sub-zone (intel-rapl:0, intel-rapl:0:1, …), in name order."""
    try:
        entries = sorted(os.listdir(root))
    except OSError:
        return
    for name in entries:
        if name.startswith(RAPL_PREFIXES):
            yield root / name


def open_rapl(root: Path = POWERCAP,
              clock: Callable[[], float] = time.perf_counter) -> RaplEnergy | Unavailable:
    if not root.is_dir():
        return Unavailable(f"no RAPL counter: {root} does not exist, as in most VMs and "
                           f"kernels without RAPL")
    domains, refused = [], []
    for zone in _zones(root):
        try:
            name = (zone / "name").read_text().strip()
        except OSError:
            continue
        if not name.startswith(RAPL_DOMAINS):
            continue
        try:
            last = int((zone / "energy_uj").read_text().strip())
            range_uj = int((zone / "max_energy_range_uj").read_text().strip())
        except PermissionError:
            refused.append(str(zone / "energy_uj"))
            continue
        except (OSError, ValueError):
            continue        # a zone without a counter of its own
        domains.append(_Domain(zone / "energy_uj", range_uj, last, f"{name}"))
    if domains:
        return RaplEnergy(domains, clock)
    if refused:
        return Unavailable(f"RAPL is here but {refused[0]} is readable by root only "
                           f"(chmod o+r it, or run as root)")
    return Unavailable(f"no RAPL package or dram counter under {root}")


def _query(fn: Callable[..., Any], *args: Any) -> Any:
    try:
        return fn(*args)
    except Exception:       # any NVML error (not supported, GPU lost): no reading
        return None


def open_counter(device_type: str, nvml: Any = None,
                 handle: Any = None) -> EnergyCounter | Unavailable:
    """The counter for the device the engine serves on: NVML's for a GPU (given its opened
    pynvml and handle), RAPL's for a CPU."""
    if device_type == "cuda":
        if nvml is None or handle is None:
            return Unavailable("NVML is not available for this GPU")
        counter = NvmlEnergy(nvml, handle)
        first = counter.read()
        return first if isinstance(first, Unavailable) else counter
    return open_rapl()


# What a decode path reads at its encoder's end (`energy_mark`), set by the engine around the
# call it measures (its ledger's `mid`): the decode paths' signatures stay as they are.
_active: contextvars.ContextVar[Callable[[], EnergyReading | None] | None] = (
    contextvars.ContextVar("infertop_energy_mark", default=None))


def set_active(read: Callable[[], EnergyReading | None] | None) -> contextvars.Token:
    return _active.set(read)


def reset_active(token: contextvars.Token) -> None:
    _active.reset(token)


def energy_mark() -> EnergyReading | None:
    """The engine's counter read now (call it after a synchronising mark), or None."""
    read = _active.get()
    return None if read is None else read()
