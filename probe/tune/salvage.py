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
from probe.tune.trials import INTERRUPTED


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
    print(f"tune: stopped by {name}; {path} and tune.md hold {done_text(document)}",
          file=sys.stderr)
    return exit_status(stopped.signum)


def done_text(document: dict) -> str:
    """What a stopped tune.json holds, in its own unit: a greedy search's steps, or a
    --search quick|exhaustive's finished trials (one a stop cut short is not finished)."""
    trials = document.get("trials")
    if isinstance(trials, list):
        finished = sum(1 for t in trials
                       if isinstance(t, dict) and t.get("status") != INTERRUPTED)
        return f"the {finished} finished trial(s)"
    return f"the {len(document.get('steps') or [])} step(s) done"
