"""How `make gpu-check` stops, as replay, tune, bench and `doctor --verify` do: SIGTERM, SIGINT
and SIGHUP end it with 128 + the signal within seconds, even while a section's compile or its
child processes hold it (the check runs in a child of its own under
probe/checks/stop_supervisor.py, whose process group — the decode runs and replays it starts
included — is killed after the grace); gpu-check.json keeps the sections that finished (it
is saved after each) and says it was stopped; and no temporary folder is left: every one the
check and its children make (gpu-decode-*, gpu-sigterm-*, gpu-batching-*) is made inside one
scratch folder this process owns and removes however the run ends."""

from __future__ import annotations

import getpass
import json
import os
import shutil
import signal
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from probe.checks.interrupts import Interrupted, exit_status, signal_of
from probe.checks.stop_supervisor import Stopped
from probe.common.atomic import remove_temporaries, write_json_atomic

SCRATCH_PREFIX = "infertop-gpu-check-"
REPORT = "gpu-check.json"


@contextmanager
def scratch_folder() -> Iterator[Path]:
    """TMPDIR pointed at a fresh folder for the duration (children inherit it), removed on the
    way out. Inductor's cache stays where it was (it defaults to TMPDIR's), so that a later
    check still finds its compiled kernels."""
    before = {name: os.environ.get(name) for name in ("TMPDIR", "TORCHINDUCTOR_CACHE_DIR")}
    if before["TORCHINDUCTOR_CACHE_DIR"] is None:
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(
            tempfile.gettempdir(), f"torchinductor_{_user()}")
    folder = Path(tempfile.mkdtemp(prefix=SCRATCH_PREFIX))
    os.environ["TMPDIR"] = str(folder)
    tempfile.tempdir = None             # gettempdir() reads TMPDIR again
    try:
        yield folder
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        tempfile.tempdir = None
        shutil.rmtree(folder, ignore_errors=True)


def _user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "unknown"


def stopped_text(signum: int) -> str:
    return f"interrupted by {signal.Signals(signum).name}"


def ending(exc: BaseException) -> int:
    """The child's end on a stop it handled itself: one line, 128 + the signal."""
    if not isinstance(exc, KeyboardInterrupt):
        raise exc
    signum = signal_of(exc)
    if isinstance(exc, Interrupted) or signum != signal.SIGINT:
        print(f"gpu-check: stopped by {signal.Signals(signum).name}", file=sys.stderr)
    return exit_status(signum)


def salvage(stopped: Stopped, out: str) -> int:
    """The check killed: gpu-check.json (saved after every section) marked stopped."""
    name = signal.Signals(stopped.signum).name
    path = Path(out) / REPORT
    remove_temporaries(path)
    try:
        report = json.loads(path.read_text())
    except (OSError, ValueError):
        print(f"gpu-check: stopped by {name} before its first section was saved",
              file=sys.stderr)
        return exit_status(stopped.signum)
    report["stopped"] = stopped_text(stopped.signum)
    try:
        write_json_atomic(path, report)
    except OSError as exc:
        print(f"infertop: error: {path}: {exc.strerror or exc}", file=sys.stderr)
    print(f"gpu-check: stopped by {name}; {path} holds the sections that finished",
          file=sys.stderr)
    return exit_status(stopped.signum)
