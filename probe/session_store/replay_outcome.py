"""How a headless `replay` ended, and the line that says so: shared by the run itself and by
the parent that salvages it from its journal after a stop (probe/session_store/replay_salvage.py).
Torch-free."""

from __future__ import annotations

import signal
from dataclasses import dataclass
from pathlib import Path

from probe.checks.interrupts import exit_status
from probe.contract.records import RequestRecord

EXIT_SERVED, EXIT_FAILED = 0, 1


@dataclass(frozen=True)
class ReplayOutcome:
    served: int
    failed: int
    first_error: str | None
    interrupted: bool
    signum: int = signal.SIGINT         # what interrupted it, when it was
    saved: bool = True                  # False: the snapshot could not be written

    @property
    def exit_status(self) -> int:
        if self.interrupted:
            return exit_status(self.signum)
        return EXIT_FAILED if self.failed or not self.saved else EXIT_SERVED

    def summary(self, path: Path) -> str:
        text = f"wrote {path}: {self.served} served"
        if self.failed:
            text += f", {self.failed} failed (first: {self.first_error})"
        if self.interrupted:
            name = "interrupted" if self.signum == signal.SIGINT else \
                f"stopped by {signal.Signals(self.signum).name}"
            text = f"{name}; {text} before the interruption"
        return text


def outcome(records: tuple[RequestRecord, ...], interrupted: bool,
            signum: int = signal.SIGINT, saved: bool = True) -> ReplayOutcome:
    failed = [r for r in records if not r.ok]
    return ReplayOutcome(served=len(records) - len(failed), failed=len(failed),
                         first_error=failed[0].error if failed else None,
                         interrupted=interrupted, signum=signum, saved=saved)


def kept_in(journal_path: str | None, served: int, journal_error: str | None = None) -> str:
    """Where the requests served are kept when the snapshot is not."""
    if journal_path is None:
        return f"the {served} requests served are lost (this run kept no journal)"
    text = (f"the {served} requests served are kept in {journal_path}: write them with "
            f"`infertop snapshot recover {journal_path} -o OTHER.json`")
    if journal_error:
        text += f" (which stopped early: {journal_error})"
    return text
