"""The bandwidth at which this machine re-reads a model's decode working set, measured once and
kept per machine, thread count and working-set size (the dashboard's roofline needs it at every
start; measuring takes a second or two and a quiet machine). See probe/engine/measure/step_roofline.py for
why the size matters: a working set inside the last-level cache is read about twice as fast."""

from __future__ import annotations

import json
import os
import platform
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from probe.common.atomic import atomic_write_lines

MAX_AGE_S = 30 * 24 * 3600      # forget monthly: a machine's memory rarely changes
RECHECK_S = 24 * 3600           # measure again daily, keeping the best: a measurement taken
                                # while the machine was busy would understate it for a month


@dataclass(frozen=True)
class MachineBandwidth:
    machine: str
    read_gb_s: float
    measured_unix: float
    working_set_bytes: int


def cache_path() -> Path:
    root = os.environ.get("XDG_CACHE_HOME", "")
    base = Path(root) if os.path.isabs(root) else Path.home() / ".cache"
    return base / "infertop" / "bandwidth.json"


def machine_key(device, working_set_bytes: int) -> str:
    """What the bandwidth belongs to: the host, its CPU model, the device (on a CPU, with the
    number of threads reading: one thread does not reach what two do) and the working set."""
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
    return f"{platform.node()} · {cpu} · {name} · {working_set_bytes / 2**20:.0f} MiB"


def _read(path: Path) -> dict:
    try:
        data = json.loads(path.read_text())
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def machine_bandwidth(device, working_set_bytes: int, *,
                      now: float | None = None) -> MachineBandwidth:
    """The cached measurement for this machine and working set, or a fresh one (then cached)."""
    from probe.engine.measure.step_roofline import working_set_bandwidth
    now = time.time() if now is None else now
    key, path = machine_key(device, working_set_bytes), cache_path()
    cached = _read(path).get(key)
    found = None
    if isinstance(cached, dict):
        try:
            found = MachineBandwidth(**cached)
        except TypeError:
            found = None
    if found is not None and (now - found.measured_unix > MAX_AGE_S or found.read_gb_s <= 0):
        found = None
    if found is not None and now - found.measured_unix < RECHECK_S:
        return found
    gb_s = working_set_bandwidth(device, working_set_bytes).read_gb_s
    best = gb_s if found is None else max(gb_s, found.read_gb_s)
    measured = MachineBandwidth(key, best, now, working_set_bytes)
    entries = {**_read(path), key: asdict(measured)}
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_lines(path, [json.dumps(entries, indent=1), "\n"])
    except Exception:  # no cache is no reason to fail: it is measured again next time
        pass
    return measured
