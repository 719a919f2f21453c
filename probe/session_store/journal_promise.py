"""What the dashboard may promise about a session's journal, read in one place: at the start
(an unusable state folder means no journal) and when the engine stops (whether `s` can still
write what it served). The promise itself is a value of probe/contract/protocol.py."""

from __future__ import annotations

import json
import os

from probe.contract.protocol import JournalPromise

FIRST_LINE_BYTES = 1 << 20


def journal_promise(journal_path: str | None, problem: str | None,
                    stopped: str | None = None) -> JournalPromise:
    """From the journal's path (None: there is none, `problem` says why) and the engine's
    notice that journaling stopped, if it sent one. Reads only the journal's first line."""
    if not journal_path:
        return JournalPromise(False, problem or "no session journal")
    try:
        fd = os.open(journal_path, os.O_RDONLY | os.O_NOFOLLOW)
        with os.fdopen(fd, "rb") as handle:
            first = handle.readline(FIRST_LINE_BYTES)
    except OSError as exc:
        return JournalPromise(False, f"session journal {journal_path}: {exc.strerror or exc}")
    if not _is_header(first):
        return JournalPromise(False, "the engine ended before its session began")
    if stopped:
        return JournalPromise(False, stopped, partial=True)
    return JournalPromise(True)


def _is_header(line: bytes) -> bool:
    try:
        entry = json.loads(line)
    except ValueError:
        return False
    return isinstance(entry, dict) and entry.get("kind") == "session"

