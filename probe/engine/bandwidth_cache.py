"""This machine's memory bandwidth, measured once and kept per machine (the dashboard's
roofline needs it at every start; measuring takes a few seconds and a quiet machine)."""

from __future__ import annotations

import json
import os
import platform
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from workloads.atomic import atomic_write_lines

MAX_AGE_S = 30 * 24 * 3600      # forget monthly: a machine's memory rarely changes
RECHECK_S = 24 * 3600           # measure again daily, keeping the best: a measurement taken
                                # while the machine was busy would understate it for a month


@dataclass(frozen=True)
class MachineBandwidth:
    machine: str
    gemv_read_gb_s: float
    measured_unix: float


def cache_path() -> Path:
    root = os.environ.get("XDG_CACHE_HOME", "")
    base = Path(root) if os.path.isabs(root) else Path.home() / ".cache"
    return base / "infertop" / "bandwidth.json"


def machine_key(device) -> str:
    """What the bandwidth belongs to: the host, its CPU model and the device (on a CPU, with the
    number of threads reading: one thread does not reach what two do)."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    import torch
    name = f"cpu × {torch.get_num_threads()} threads"
    if getattr(device, "type", str(device)) == "cuda":
        name = torch.cuda.get_device_name(device)
    return f"{platform.node()} · {cpu} · {name}"


def _read(path: Path) -> dict:
    try:
        data = json.loads(path.read_text())
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def machine_bandwidth(device, *, now: float | None = None) -> MachineBandwidth:
    """The cached measurement for this machine, or a fresh one (then cached)."""
    from probe.engine.roofline import measure_bandwidth
    now = time.time() if now is None else now
    key, path = machine_key(device), cache_path()
    cached = _read(path).get(key)
    found = None
    if isinstance(cached, dict):
        try:
            found = MachineBandwidth(**cached)
        except TypeError:
            found = None
    if found is not None and (now - found.measured_unix > MAX_AGE_S or found.gemv_read_gb_s <= 0):
        found = None
    if found is not None and now - found.measured_unix < RECHECK_S:
        return found
    gb_s = measure_bandwidth(device).gemv_read_gb_s
    measured = (MachineBandwidth(key, gb_s, now) if found is None or gb_s > found.gemv_read_gb_s
                else MachineBandwidth(key, found.gemv_read_gb_s, now))
    entries = {**_read(path), key: asdict(measured)}
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_lines(path, [json.dumps(entries, indent=1), "\n"])
    except Exception:  # no cache is no reason to fail: it is measured again next time
        pass
    return measured
