"""`infertop snapshot recover JOURNAL -o OUT`: the session JSON of a run that ended without
saving (kill -9, a power cut, a snapshot a full disk refused), from its journal. Requests it
had dispatched and not served are recorded as failed, and a notice marks the end at the
journal's last write. Torch-free."""

from __future__ import annotations

import os

from probe.checks.output_lock import OutputLock
from probe.common.atomic import write_json_atomic
from probe.common.errors import BadInput
from probe.common.output_rule import check_output_file
from probe.contract.protocol import EngineExit
from probe.session_store.journal_reader import journal_notes, read_journal
from probe.session_store.snapshot import saved_session

RECOVERED = "the run ended without saving; recovered from its journal"


def recover(journal_path: str, out: str) -> str:
    """Write OUT; returns the line that says what it holds."""
    check_output_file(out, "-o", inputs=(journal_path,))
    with OutputLock(out, "-o"):     # one writer per output, as every --out
        journal = read_journal(journal_path)
        if journal is None:
            raise BadInput(f"session journal {journal_path}: the run ended before its session "
                           f"began (no header): nothing to recover")
        ended = EngineExit(os.stat(journal_path).st_mtime, None, RECOVERED)
        document = journal.document(ended)
        # what infertop's own readers refuse is never written (the lines were checked one by one)
        saved_session(document, f"session journal {journal_path} (recovered)")
        path = write_json_atomic(out, document)
    records = document["requests"]
    failed = sum(1 for r in records if r.get("error"))
    served = len(records) - failed
    lost = len(records) - len(journal.data.records)
    text = f"wrote {path}: {served} served, {failed} failed"
    text += f" ({lost} of them dispatched and never served)" if lost else ""
    if journal.unreadable or journal.repeated:
        text = f"recovered {len(journal.data.records)} records; {journal_notes(journal)}\n{text}"
    return text
