"""The session journal of a headless run (`replay`), as the dashboard's engine keeps one: every
record, event and dispatch appended as it is committed, so that after a kill -9, a power cut
or a snapshot that could not be written, `infertop snapshot recover JOURNAL -o OUT` writes the
session. The journal is removed once the run's own snapshot is written."""

from __future__ import annotations

import os
import threading
import time
from typing import TYPE_CHECKING, Any, Callable

from probe.contract.options import OptConfig
from probe.engine.state_files import new_replay_journal, state_folder_problem
from probe.engine.workload_setup import PreparedWorkload
from probe.session_store.journal import CONTEXT_SECTIONS, Dispatch, JournaledSession, JournalWriter
from workloads.replayer import Replayer, ScheduledRequest, Submit

if TYPE_CHECKING:
    from probe.engine.engine import Engine


def dispatch_of(engine: Engine, scheduled: ScheduledRequest) -> Dispatch:
    return Dispatch(scheduled.seq, scheduled.request.id or f"r{scheduled.seq}",
                    scheduled.request.input_length,
                    engine.clock.to_session_s(scheduled.scheduled_s))


def write_header(writer: JournalWriter, engine: Engine, workload: PreparedWorkload,
                 trace_name: str, asked: int | None = None) -> None:
    """The session's start on the wall clock, and where it runs, as its JSON says it."""
    from probe.engine.process.headless import document_for

    document = document_for(engine, workload, trace_name, asked=asked)
    writer.header(time.time() - engine.clock.now_s(),
                  {name: document[name] for name in CONTEXT_SECTIONS})


class JournaledReplayer:
    """A replayer whose every dispatch is journaled before the engine sees it (a request the
    run held when it died is recovered as failed, not forgotten); anything else is the
    wrapped replayer's."""

    def __init__(self, replayer: Replayer, journal: Callable[[ScheduledRequest], None]) -> None:
        self._replayer, self._journal = replayer, journal

    @property
    def paused(self) -> bool:
        return self._replayer.paused

    @property
    def total(self) -> int | None:
        return self._replayer.total

    def request_done(self) -> None:
        self._replayer.request_done()

    def run(self, submit: Submit, stop: threading.Event) -> None:
        def journaled(scheduled: ScheduledRequest) -> None:
            self._journal(scheduled)
            submit(scheduled)
        self._replayer.run(journaled, stop)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._replayer, name)


def open_headless_journal(engine: Engine, workload: PreparedWorkload, trace_name: str,
                          options: OptConfig, asked: int | None = None
                          ) -> tuple[JournalWriter | None, str | None]:
    """The run's journal writer, the engine already serving into it; or None and why (no
    journal is no reason not to serve: the run says so and goes on)."""
    try:
        writer = JournalWriter(new_replay_journal())
    except OSError as exc:
        return None, f"no session journal: {state_folder_problem(exc)}"
    # the engine made a Session of its own and registered its options there: again here
    engine.session, engine.config_id = JournaledSession(writer), ""
    engine.set_options(options)
    write_header(writer, engine, workload, trace_name, asked)
    return writer, writer.error


def remove_journal(writer: JournalWriter) -> None:
    writer.close()
    try:
        os.unlink(writer.path)
    except OSError:
        pass
