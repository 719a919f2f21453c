"""What the parent of a supervised `replay` writes when it had to kill the run
(probe/checks/stop_supervisor.py): the snapshot of everything the run's journal holds, the
requests it had dispatched and not served recorded as failed with the reason, then the same
summary and `wrote` line the run itself prints. Torch-free: the parent never imports torch."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
from pathlib import Path

from probe.checks.interrupts import exit_status
from probe.checks.stop_supervisor import Stopped
from probe.common.atomic import remove_temporaries, write_json_atomic
from probe.common.errors import BadInput
from probe.contract.protocol import EngineExit
from probe.session_store.journal_reader import journal_notes, read_journal
from probe.session_store.replay_outcome import kept_in, outcome
from probe.session_store.run_summary import run_summary

JOURNAL_NOTE = "journal "


def salvage_replay(stopped: Stopped, out: str) -> int:
    """Write `out` from the killed run's journal; the exit status (128 + the signal, or 1
    when the snapshot could not be written)."""
    name = signal.Signals(stopped.signum).name
    status = exit_status(stopped.signum)
    remove_temporaries(Path(out))       # a snapshot the child was killed writing
    journal_path = next((note[len(JOURNAL_NOTE):] for note in stopped.notes
                         if note.startswith(JOURNAL_NOTE)), None)
    if journal_path is None or not os.path.exists(journal_path):
        print(f"infertop: stopped by {name}; nothing saved: the run had not begun serving, or "
              f"kept no journal", file=sys.stderr)
        return status
    try:
        journal = read_journal(journal_path)
    except BadInput as exc:
        print(f"infertop: stopped by {name}; {exc}", file=sys.stderr)
        return status
    if journal is None:
        print(f"infertop: stopped by {name} before the session began; nothing served",
              file=sys.stderr)
        return status
    how = ("and a second signal, at once" if stopped.again else
           "still busy after the grace, as in a compile that cannot be cut short")
    end = EngineExit(time.time(), None, f"by {name}, {how}")
    lost, _ = journal.crash_marks(end, restarted=False)
    records = journal.data.records + lost
    if journal.repeated or journal.unreadable:
        print(f"infertop: the journal: {journal_notes(journal)}", file=sys.stderr)
    print(run_summary(records))
    try:
        path = write_json_atomic(out, journal.document(end))
    except OSError as exc:
        print(f"infertop: error: --out {out}: cannot write: {exc.strerror or exc}; "
              + kept_in(journal_path, len(journal.data.records)), file=sys.stderr)
        return 1
    with contextlib.suppress(OSError):
        os.unlink(journal_path)
    print(outcome(records, True, stopped.signum).summary(path))
    return status
