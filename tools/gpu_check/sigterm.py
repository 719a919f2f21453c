"""`make gpu-check`'s stop during a compile: `infertop replay` of HF generate() under
compile=default (about 90 s of compiling on the GPU machine's host), SIGTERM once the compile
has run for a while, and the seconds until the process ended, with what it saved."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def sigterm_during_compile(model: str, device: str, *, log, after_s: float = 15.0,
                          limit_s: float | None = None) -> dict:
    """`limit_s`: gpu-check's budget for the section; the signalled replay is killed when it
    runs past it (it ended past the issue's 10 s long before)."""
    out = Path(tempfile.mkdtemp(prefix="gpu-sigterm-")) / "run.json"
    command = [sys.executable, "-m", "infertop", "replay", "--device", device, "--model", model,
               "--trace", "chat", "--requests", "6", "--opt", "compile=default",
               "--drift-every", "0", "--out", str(out)]
    child = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                             text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    time.sleep(after_s)
    if child.poll() is not None:
        return {"skipped": f"the replay ended before the signal (exit {child.returncode})"}
    sent = time.monotonic()
    child.send_signal(signal.SIGTERM)
    try:
        _, stderr = child.communicate(
            timeout=120.0 if limit_s is None else max(limit_s - after_s, 11.0))
    except subprocess.TimeoutExpired:
        child.kill()
        _, stderr = child.communicate()
    seconds = time.monotonic() - sent
    saved = json.loads(out.read_text()) if out.exists() else None
    result = {"seconds": seconds, "rc": child.returncode, "saved": saved is not None,
              "records": None if saved is None else len(saved.get("requests", [])),
              "errors": None if saved is None else sorted(
                  {r.get("error") for r in saved.get("requests", []) if r.get("error")})[:3],
              "stderr_tail": stderr[-600:]}
    log(f"SIGTERM {after_s:.0f} s into an HF generate() compile: ended in {seconds:.1f} s, "
        f"exit {child.returncode}, saved {result['saved']} ({result['records']} records)")
    return result
