"""Issue 38: `x` lost the 22 requests queued behind the compile ("lost: the engine stopped …"),
and the abandoned compile counted in its config's compiles. A stop the dashboard asked for now
carries the queue across the restart; a death still records what it held as lost."""

from __future__ import annotations

from probe.analysis.stats import segment_stats
from probe.contract.options import OptConfig
from probe.contract.protocol import EngineExit
from probe.contract.records import ABANDONED, CompileInProgress
from probe.contract.session import SessionData
from probe.engine.state_files import new_journal
from probe.session_store.journal import Dispatch, JournaledSession, JournalWriter
from probe.session_store.journal_reader import read_journal
from probe.session_store.restart_carry import restart_marks
from tests.probe.doctor_records import record


def _journal(tmp_path):
    path = new_journal(tmp_path / "state")
    writer = JournalWriter(path)
    session = JournaledSession(writer)
    writer.header(1000.0, {})
    session.config_id(OptConfig())
    session.config_id(OptConfig(compile="default"))
    for i in range(3):
        writer.dispatch(Dispatch(i, f"r{i}", 10, float(i)))
        session.add_record(record(i, arrival_s=float(i)))
    for i in range(3, 25):                  # 22 queued behind c2's compile
        writer.dispatch(Dispatch(i, f"r{i}", 10, float(i)))
    writer.close()
    return read_journal(path)


def test_a_stop_asked_for_carries_every_held_request_and_records_the_abandoned_compile(tmp_path):
    journal = _journal(tmp_path)
    compiling = CompileInProgress("1/0", "decode_step", "r3", since_s=3.5, waited_before_s=0.0,
                                  stage="inductor")
    end = EngineExit(1000.0 + 60.0, None, "stopped to give up a compile", abandoned=compiling)
    marks = restart_marks(journal, end)
    assert marks.lost == ()
    assert [d.seq for d in marks.carried] == list(range(3, 25))
    assert "22 queued request(s) carried across the restart, none lost" in marks.notice.text
    event = marks.abandoned
    assert event is not None and event.kind == ABANDONED and event.config_id == "c2"
    assert event.duration_s == 60.0 - 3.5 and event.request_id == "r3"
    stats = segment_stats("c2", [], [event], [], {}, None)
    assert stats.compiles == stats.recompiles == stats.graphs == 0 and stats.compile_s == 0


def test_a_death_still_records_what_it_held_as_lost(tmp_path):
    journal = _journal(tmp_path)
    marks = restart_marks(journal, EngineExit(1000.0 + 60.0, -9, "killed"))
    assert marks.carried == () and len(marks.lost) == 22 and marks.abandoned is None
    assert all(r.error and r.error.startswith("lost") for r in marks.lost)


def test_the_carried_requests_are_the_same_trace_requests_at_their_arrival(tmp_path):
    from probe.common.clock import SessionClock
    from probe.engine.process.carried_queue import scheduled_again
    from workloads.trace_records import Trace, TraceRequest
    journal = _journal(tmp_path)
    requests = tuple(TraceRequest(timestamp_ms=i * 1000.0, input_length=10, output_length=4,
                                  id=f"r{i}") for i in range(10))
    trace = Trace(requests=requests, name="t")
    clock = SessionClock(start=500.0)
    again = scheduled_again(restart_marks(journal, EngineExit(1060.0, None, "x")).carried,
                            trace, clock)
    assert [s.seq for s in again] == list(range(3, 25))
    assert again[0].request.id == "r3" and again[10].request.id == "r3"   # 13 % 10
    assert again[0].scheduled_s == 503.0 and clock.to_session_s(again[0].scheduled_s) == 3.0
    assert isinstance(SessionData(), SessionData)
