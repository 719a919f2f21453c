"""The live A/B's engine side, without an engine: arm A's splitter hands every other arrival to
arm B; both arms append to the one session journal; when B stops, A takes B's records in
(without writing them twice) and serves what B was handed and did not record."""

from __future__ import annotations

import json
import threading
from types import SimpleNamespace

from hypothesis import given
from hypothesis import strategies as st

from probe.common.clock import SessionClock
from probe.contract.options import OptConfig
from probe.contract.protocol import Diverted
from probe.engine.process.ab_split import Splitter, end_split
from probe.engine.state_files import new_journal
from probe.session_store.journal import Dispatch, JournaledSession, JournalWriter
from probe.session_store.journal_reader import read_journal, save_from_journal
from tests.probe.test_journal import CONTEXT, fill, record
from workloads.replayer import ScheduledRequest
from workloads.trace_records import TraceRequest


def scheduled(seq: int, clock: SessionClock) -> ScheduledRequest:
    return ScheduledRequest(seq, TraceRequest(timestamp_ms=seq * 100, input_length=10,
                                              output_length=4, id=f"r{seq}"),
                            clock.start + seq * 0.1)


@given(st.integers(min_value=0, max_value=60), st.sets(st.integers(0, 59)))
def test_every_other_arrival_goes_to_b_and_one_that_cannot_be_sent_stays(n, unsendable):
    clock, sent = SessionClock(start=100.0), []

    def send(event) -> bool:
        if event.request.seq in unsendable:
            return False
        sent.append(event)
        return True

    splitter = Splitter(clock, send)
    kept = [seq for seq in range(n) if not splitter(scheduled(seq, clock))]
    assert all(isinstance(e, Diverted) for e in sent)
    handed = [e.request.seq for e in sent]
    assert handed == [s for s in range(1, n, 2) if s not in unsendable]
    assert sorted(kept + handed) == list(range(n))          # each arrival served once
    assert sorted(splitter.diverted) == handed
    for event in sent:                                      # due times in session seconds
        assert abs(event.request.arrival_s - event.request.seq * 0.1) < 1e-9


def test_both_arms_append_to_one_journal_and_every_line_is_read_back(tmp_path):
    path = new_journal(tmp_path / "state")
    a = JournaledSession(JournalWriter(path))
    a.config_id(OptConfig())
    a._writer.header(1000.0, CONTEXT)
    b = JournaledSession(JournalWriter(path), read_journal(path).data)
    assert b.config_id(OptConfig(kv_cache="off")) == "c2"

    def serve(session: JournaledSession, config_id: str, seqs: range) -> None:
        for seq in seqs:
            session.add_record(record(seq, config_id))

    threads = [threading.Thread(target=serve, args=(a, "c1", range(0, 400, 2))),
               threading.Thread(target=serve, args=(b, "c2", range(1, 400, 2)))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    journal = read_journal(path)
    assert journal is not None and not journal.unreadable
    by_config = {c: sorted(r.seq for r in journal.data.records if r.config_id == c)
                 for c in ("c1", "c2")}
    assert by_config == {"c1": list(range(0, 400, 2)), "c2": list(range(1, 400, 2))}


def test_ending_takes_bs_records_in_once_and_serves_what_b_left(tmp_path):
    path = new_journal(tmp_path / "state")
    writer = JournalWriter(path)
    a = JournaledSession(writer)
    a.config_id(OptConfig())
    writer.header(1000.0, CONTEXT)
    clock, carried = SessionClock(start=100.0), []
    splitter = Splitter(clock, lambda event: True)
    for seq in range(8):
        writer.dispatch(Dispatch(seq, f"r{seq}", 10, seq * 0.1))
        if not splitter(scheduled(seq, clock)):
            a.add_record(record(seq, "c1"))             # arm A served its own at once
    b = JournaledSession(JournalWriter(path), read_journal(path).data)
    b.config_id(OptConfig(kv_cache="off"))
    for seq in (1, 3):                                  # B recorded two of its four
        b.add_record(record(seq, "c2"))
    lines_before = open(path).read().count('"kind":"record"')
    loop = SimpleNamespace(divert=splitter, engine=SimpleNamespace(session=a),
                           carry=carried.extend)

    left = end_split(loop, splitter, path, "c2")        # type: ignore[arg-type]

    assert loop.divert is None
    assert left == 2 and [s.seq for s in carried] == [5, 7]
    held = sorted((r.seq, r.config_id) for r in a.freeze().records)
    assert held == [(0, "c1"), (1, "c2"), (2, "c1"), (3, "c2"), (4, "c1"), (6, "c1")]
    assert open(path).read().count('"kind":"record"') == lines_before   # none written twice


def test_the_split_hands_b_every_other_queued_request_and_keeps_the_rest_in_order():
    from probe.engine.serving import ServingLoop

    clock = SessionClock(start=100.0)
    loop = ServingLoop(SimpleNamespace(), SimpleNamespace())     # type: ignore[arg-type]
    for seq in range(5):
        loop._queue.put(scheduled(seq, clock))
    handed: list[int] = []
    loop.divert = Splitter(clock, lambda event: handed.append(event.request.seq) or True)
    assert loop.split_queue() == 2
    assert handed == [1, 3]
    assert [s.seq for s in loop._take_now(10)] == [0, 2, 4]


def test_a_save_beside_two_serving_engines_records_nothing_they_hold_as_lost(tmp_path):
    path = new_journal(tmp_path / "state")
    fill(path)                                      # seq 3 dispatched and not served yet
    live = json.loads(save_from_journal(path, tmp_path / "live.json", None,
                                        serving=True).read_text())
    down = json.loads(save_from_journal(path, tmp_path / "down.json", None).read_text())
    assert sorted(r["seq"] for r in live["requests"]) == [0, 1, 2]
    assert sorted(r["seq"] for r in down["requests"]) == [0, 1, 2, 3]     # 3: lost
    assert len(down["notices"]) == len(live["notices"]) + 1
