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

MAX_AGE_S = 30 * 24 * 3600      # re-measure monthly: a machine's memory rarely changes


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
    """What the bandwidth belongs to: the host, its CPU model and the device."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    name = str(device)
    if getattr(device, "type", "") == "cuda":
        import torch
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
    from probe.roofline import measure_bandwidth
    now = time.time() if now is None else now
    key, path = machine_key(device), cache_path()
    cached = _read(path).get(key)
    if isinstance(cached, dict):
        try:
            found = MachineBandwidth(**cached)
            if now - found.measured_unix < MAX_AGE_S and found.gemv_read_gb_s > 0:
                return found
        except TypeError:
            pass
    measured = MachineBandwidth(key, measure_bandwidth(device).gemv_read_gb_s, now)
    entries = {**_read(path), key: asdict(measured)}
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_lines(path, [json.dumps(entries, indent=1), "\n"])
    except Exception:  # no cache is no reason to fail: it is measured again next time
        pass
    return measured
