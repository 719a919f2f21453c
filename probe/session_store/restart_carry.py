"""What a restarted engine does with the requests its predecessor held: after a stop the
dashboard asked for (`x`, `R` on a live engine, a warm switch's cut over) it serves them — they
keep their arrival times, so their queue wait counts the restart — instead of recording them
lost; after a death it records them lost, as before (Journal.crash_marks). A compile given up
with `x` becomes its own event, kind ABANDONED: not a compile or a recompile, so it is counted
in no config's compiles, compile seconds or graphs; the requests that waited on it still show
that wait (attribution's compile cause, the cold chain)."""

from __future__ import annotations

from dataclasses import dataclass

from probe.contract.protocol import EngineExit
from probe.contract.records import ABANDONED, CompileEvent, Notice, RequestRecord
from probe.session_store.journal import Dispatch
from probe.session_store.journal_reader import Journal


@dataclass(frozen=True)
class RestartMarks:
    lost: tuple[RequestRecord, ...]         # recorded failed (a death)
    carried: tuple[Dispatch, ...]           # served by the new engine (a stop asked for)
    abandoned: CompileEvent | None          # the compile `x` gave up
    notice: Notice


def held(journal: Journal) -> tuple[Dispatch, ...]:
    """The requests dispatched and never served or failed, in dispatch order."""
    done = {r.seq for r in journal.data.records}
    return tuple(sorted((d for d in journal.dispatches if d.seq not in done),
                        key=lambda d: d.seq))


def restart_marks(journal: Journal, end: EngineExit) -> RestartMarks:
    if not end.carries_queue:
        lost, notice = journal.crash_marks(end, restarted=True)
        return RestartMarks(lost, (), None, notice)
    at_s = max(end.at_unix - journal.started_unix, 0.0)
    carried = held(journal)
    abandoned = _abandoned_event(end, at_s, journal)
    text = f"engine restarted after it {end.said()}"
    if abandoned is not None:
        text = (f"gave up {abandoned.config_id}'s compile {abandoned.compile_id} after "
                f"{abandoned.duration_s or 0.0:.0f} s (x): the engine restarted")
    text += (f"; {len(carried)} queued request(s) carried across the restart, none lost"
             if carried else "; no request was queued")
    return RestartMarks((), carried, abandoned, Notice(at_s, "info", text))


def _abandoned_event(end: EngineExit, at_s: float, journal: Journal) -> CompileEvent | None:
    compiling = end.abandoned
    if compiling is None:
        return None
    configs = list(journal.data.configs)
    config_id = configs[-1] if configs else None
    return CompileEvent(
        compile_id=compiling.compile_id, kind=ABANDONED,
        function=compiling.function or f"frame {compiling.compile_id.split('/', 1)[0]}",
        start_s=compiling.since_s, duration_s=max(at_s - compiling.since_s, 0.0),
        reason=f"given up with x after {max(at_s - compiling.since_s, 0.0):.0f} s"
               + (f" in {compiling.stage}" if compiling.stage else ""),
        request_id=compiling.request_id, config_id=config_id)
