"""Where `doctor --verify` keeps its runs' sessions, and what its supervising parent says when
it had to kill the verification (probe/checks/stop_supervisor.py). The folder belongs to the
parent: a temporary one (no --verify-runs) is removed however the run ends, a signal's kill
included, so none is left in TMPDIR; --verify-runs DIR keeps the sessions of the runs that
finished. Torch-free: the parent never imports torch."""

from __future__ import annotations

import shutil
import signal
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from probe.checks.interrupts import exit_status
from probe.checks.stop_supervisor import Stopped

TEMPORARY_PREFIX = "infertop-verify-"


@contextmanager
def runs_folder(keep: str | None) -> Iterator[Path]:
    """--verify-runs DIR (made here, its parent checked to exist by the output rule), or a
    temporary folder removed on the way out."""
    if keep is not None:
        folder = Path(keep)
        folder.mkdir(exist_ok=True)
        yield folder
        return
    folder = Path(tempfile.mkdtemp(prefix=TEMPORARY_PREFIX))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def salvage_verify(stopped: Stopped, runs: Path, *, kept: bool) -> int:
    """The verification killed: the temporaries a killed writer left removed, the runs that
    finished named (with --verify-runs), 128 + the signal."""
    name = signal.Signals(stopped.signum).name
    for leftover in runs.glob(".*.tmp"):
        leftover.unlink(missing_ok=True)
    finished = sorted(runs.glob("*.json"))
    where = (f"the {len(finished)} run(s) that finished are in {runs}" if kept
             else "nothing is kept (no --verify-runs)")
    print(f"doctor --verify: stopped by {name} before the comparison; {where}",
          file=sys.stderr)
    return exit_status(stopped.signum)
