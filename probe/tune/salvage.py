"""What the parent of a supervised `tune` says and keeps when it had to kill the search
(probe/checks/stop_supervisor.py): tune.json and tune.md were rewritten after every step,
so they hold the steps done; tune.json is marked as stopped. The run that was cut short is
never counted. Torch-free: the parent never imports torch."""

from __future__ import annotations

import json
import signal
import sys
from pathlib import Path

from probe.checks.interrupts import exit_status
from probe.checks.stop_supervisor import Stopped
from probe.common.atomic import remove_temporaries, write_json_atomic


def salvage_tune(stopped: Stopped, out: str) -> int:
    name = signal.Signals(stopped.signum).name
    path = Path(out) / "tune.json"
    for written in ("tune.json", "tune.md"):   # what the child was killed writing
        remove_temporaries(Path(out) / written)
    try:
        document = json.loads(path.read_text())
    except (OSError, ValueError):
        print(f"tune: stopped by {name} before its baseline was measured; nothing to report",
              file=sys.stderr)
        return exit_status(stopped.signum)
    document["done"] = False
    document["stopped"] = f"interrupted by {name} (the run in progress was not counted)"
    try:
        write_json_atomic(path, document)
    except OSError as exc:
        print(f"infertop: error: {path}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    steps = len(document.get("steps") or [])
    print(f"tune: stopped by {name}; {path} and tune.md hold the {steps} step(s) done",
          file=sys.stderr)
    return exit_status(stopped.signum)
