"""What the dashboard may promise about a session's journal, said in one place: at the start
(an unusable state folder means no journal) and when the engine stops (whether `s` can still
write what it served). Torch-free: the dashboard's process reads it."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass

JOURNAL_STOPPED = "journaling stopped"     # in the notice the engine sends when a write fails
FIRST_LINE_BYTES = 1 << 20


@dataclass(frozen=True)
class JournalPromise:
    """`kept`: `s` can write everything served from the journal; otherwise `why` not, and
    `partial`: it can still write what the journal holds."""
    kept: bool
    why: str = ""
    partial: bool = False

    def after_crash(self) -> str:
        """The second half of the toast shown when the engine stops."""
        if self.kept:
            return ("Everything served is kept: s saves it, R restarts the engine and continues "
                    "the session.")
        if self.partial:
            return (f"Its journal stopped early ({self.why}): s saves what it holds, not what "
                    f"came after; R restarts the engine.")
        return (f"What it served cannot be saved ({self.why}); R restarts the engine "
                f"(a new session).")


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

