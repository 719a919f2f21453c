"""`make gpu-check`'s batching runs: `infertop replay` of the Azure conversation trace at full
load (a closed loop keeping twice the slots outstanding), continuous batching, at several slot
counts and at the default sizing. Tokens/s come from the saved session (the one throughput
function); GPU utilization is NVML's mean over the serving window (from the first request
served to the last, as the replay's per-request lines on its piped stderr mark it)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import torch

from probe.analysis.stats import tokens_per_s
from probe.session_store.snapshot import read_document, session_data
from tools.gpu_check.energy import energy_text, session_energy


def _sampler(device: torch.device, stop: threading.Event, into: list[tuple[float, float]],
             host: list[tuple[float, float]], pid_box: list[int]) -> None:
    """NVML utilization, and the CPU of the replay's process tree (replay serves in a child
    of the command's process: the busiest of them is the engine), twice a second."""
    import psutil

    from probe.engine.observe.device_probe import DeviceProbe
    probe = DeviceProbe(device)
    watched: dict[int, psutil.Process] = {}
    while not stop.wait(0.5):
        now = time.monotonic()
        try:
            util = probe.sample().util_pct
        except Exception:  # a reading NVML failed is left out; the CPU is still read
            util = None
        if util is not None:
            into.append((now, util))
        if not pid_box:
            continue
        try:
            root = psutil.Process(pid_box[0])
            tree = [root, *root.children(recursive=True)]
        except psutil.Error:
            continue
        busiest = 0.0
        for process in tree:
            if process.pid not in watched:      # its first reading only starts its clock
                watched[process.pid] = process
                try:
                    process.cpu_percent(None)
                except psutil.Error:
                    pass
                continue
            try:
                busiest = max(busiest, watched[process.pid].cpu_percent(None))
            except psutil.Error:
                pass
        host.append((now, busiest))


def _steps_text(steps: dict | None) -> str:
    if not steps:
        return ""
    last = list(steps.values())[-1]
    host, period = last.get("host_ms"), last.get("period_ms")
    return (f"steps {last.get('steps')}, rows {last.get('rows') or 0:.0f}, host "
            f"{host or 0:.2f} ms (joins {last.get('join_ms') or 0:.2f}) / period "
            f"{period or 0:.2f} ms, graphs {last.get('captured')}")


# A replay stopped at its limit gets SIGTERM, which saves what it served within seconds
# (docs/reliability.md); this long after, it is killed and its run is lost.
STOP_GRACE_S = 20.0


def _stop_at_limit(process: subprocess.Popen, limit_s: float, stopped: threading.Event,
                   done: threading.Event) -> None:
    """SIGTERM at `limit_s` (the replay saves what it served), SIGKILL STOP_GRACE_S later:
    a timer of its own, so a replay that prints nothing (a compile that does not end) is
    stopped too."""
    if done.wait(limit_s):
        return
    stopped.set()
    process.send_signal(signal.SIGTERM)
    if not done.wait(STOP_GRACE_S):
        process.kill()


def mean_between(samples: list[tuple[float, float]], start: float, end: float) -> float | None:
    inside = [v for t, v in samples if start <= t <= end]
    return sum(inside) / len(inside) if inside else None


def replay_run(model: str, device: torch.device, *, max_batch: int, requests: int,
               options: list[str], timeout_s: float, log, at_load=None) -> dict:
    """`at_load`: called once, halfway through the requests or through `timeout_s`, whichever
    comes first (a reading under load). At `timeout_s` the replay is stopped and measured on
    what it served (`stopped_at_limit`)."""
    out = Path(tempfile.mkdtemp(prefix="gpu-batching-")) / "run.json"
    outstanding = min(1024, 2 * max_batch) if max_batch else 512
    command = [sys.executable, "-m", "infertop", "replay", "--device", str(device),
               "--model", model, "--trace", "azure-conv", "--requests", str(requests),
               "--concurrency", str(outstanding), "--drift-every", "0", "--out", str(out)]
    command += [f"--opt={o}" for o in options]
    if max_batch:
        command += ["--max-batch", str(max_batch)]
    util: list[tuple[float, float]] = []
    host: list[tuple[float, float]] = []
    stop, pid_box = threading.Event(), list[int]()
    sampler = threading.Thread(target=_sampler, args=(device, stop, util, host, pid_box),
                               daemon=True)
    sampler.start()
    served_at: list[float] = []
    lines: list[str] = []
    started = time.monotonic()
    process = subprocess.Popen(command, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL,
                               text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    pid_box.append(process.pid)
    stopped, ended = threading.Event(), threading.Event()
    limit = threading.Thread(target=_stop_at_limit, args=(process, timeout_s, stopped, ended),
                             daemon=True)
    limit.start()
    assert process.stderr is not None
    for line in process.stderr:
        lines.append(line)
        if line.startswith("[") and " latency=" in line:       # a request served
            served_at.append(time.monotonic())
            halfway = (len(served_at) >= requests // 2
                       or time.monotonic() - started > timeout_s / 2)
            if at_load is not None and halfway and not stopped.is_set():
                at_load()
                at_load = None
    process.wait()
    ended.set()
    limit.join()
    stop.set()
    sampler.join()
    result: dict = {"max_batch": max_batch or "sized", "options": options, "rc": process.returncode,
                    "stopped_at_limit": stopped.is_set()}
    document = read_document(out) if out.exists() else None
    data = session_data(document) if document is not None else None
    records = data.records if data is not None else ()
    served = [r for r in records if r.ok]
    if stopped.is_set() and process.returncode == 128 + signal.SIGTERM and not served:
        # its limit came while it was still starting (a busy host): nothing to measure, and
        # nothing went wrong
        result["unmeasured"] = (f"stopped at its {timeout_s:.0f} s limit before it served "
                                f"a request")
        log(f"  slots {result['max_batch']!s:>5} {','.join(options)}: not measured: "
            f"{result['unmeasured']}")
        return result
    if document is None or data is None:
        result["crashed"] = "".join(lines[-8:])[-800:]
        return result
    window = (served_at[0], served_at[-1]) if len(served_at) > 1 else (started, time.monotonic())
    result.update({
        "slots": document.get("settings", {}).get("max_batch"),
        "served": len(served), "failed": len(records) - len(served),
        "tokens_per_s": tokens_per_s(served),
        "energy": session_energy(data),
        "gpu_util_pct": mean_between(util, *window),
        "engine_host_cpu_pct": mean_between(host, *window),     # its busiest process
        "serving_s": window[1] - window[0],
        "notes": [n.get("text") for n in document.get("notices", [])][:4],
        "steps": document.get("batch_steps"),
    })
    log(f"  slots {result['slots']!s:>5} {','.join(options)}: "
        f"{result['tokens_per_s'] or 0:9.0f} tokens/s  "
        f"GPU {result['gpu_util_pct'] or 0:5.1f}%  host {result['engine_host_cpu_pct'] or 0:5.0f}% "
        f"of a core  served {len(served)} failed {result['failed']}  "
        f"{energy_text(result['energy'])}  "
        f"{_steps_text(result['steps'])}")
    return result
