"""The session journal: what the engine commits is read back whole, a line torn by a kill is
skipped, a restart's session goes on from it, and the session JSON can be written from it
with no engine (torch-free)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from probe.common.errors import BadInput
from probe.contract.options import OptConfig
from probe.contract.protocol import EngineExit
from probe.contract.records import CompileEvent, GraphBreakRecord, KVPool, Notice, RequestRecord
from probe.engine.state_files import new_journal
from probe.session_store.journal import Dispatch, JournaledSession, JournalWriter, merge_breaks
from probe.session_store.journal_reader import Journal, read_journal, save_from_journal
from probe.session_store.snapshot import read_document, session_data

CONTEXT = {"environment": {"device": "cpu"}, "model": {"name": "t5-tiny", "dtype": "fp32"},
           "trace": {"name": "chat"}, "settings": {"bucket_edges": [64]},
           "live": {"device_sample": None, "roofline": None}}


def record(seq: int, config_id: str = "c1", error: str | None = None) -> RequestRecord:
    return RequestRecord(
        id=f"r{seq}", seq=seq, config_id=config_id, input_tokens=10 + seq, padded_tokens=64,
        output_tokens=0 if error else 4, arrival_s=seq * 1.0, start_s=seq + 0.1,
        first_token_s=None if error else seq + 0.2, end_s=seq + 0.5, queue_ms=100.0,
        compile_stall_ms=0.0, encoder_ms=10.0, decoder_ms=20.0,
        ttft_ms=None if error else 200.0, tpot_ms=None if error else 5.0, latency_ms=500.0,
        kv_cache_bytes=4096, kv_cache_used_bytes=1024, kv_self_attention_bytes=512,
        kv_cross_attention_bytes=512, error=error, tokens=None if error else (5, 6, 7, 8))


def breaks(count: int) -> list[GraphBreakRecord]:
    return [GraphBreakRecord("c1", "Data-dependent branching", "decode_hf.py:40", count)]


@pytest.fixture
def journal_path(tmp_path) -> str:
    return new_journal(tmp_path / "state")


def fill(path: str, started_unix: float = 1000.0) -> JournaledSession:
    """A session as an engine makes one: a header, two configs, records, every other kind."""
    writer = JournalWriter(path)
    session = JournaledSession(writer)
    assert session.config_id(OptConfig()) == "c1"
    writer.header(started_unix, CONTEXT)
    for seq in range(3):
        writer.dispatch(Dispatch(seq, f"r{seq}", 10 + seq, seq * 1.0))
        session.add_record(record(seq, error="RuntimeError: boom" if seq == 1 else None))
    session.add_events([CompileEvent("0/0", "compile", "decode_step", 1.5, 2.0, None, "r1", "c1",
                                     graphs=1)])
    session.set_breaks(breaks(2))
    session.set_breaks(breaks(2))                        # unchanged: not written again
    session.add_reference("r0", (5, 6, 7, 8))
    session.set_kv_pool("c1", KVPool("paged", 16, 64, 12, 2048))
    session.add_notice(Notice(2.5, "warning", "int8 is not available here"))
    assert session.config_id(OptConfig(precision="bf16"), ("a note",)) == "c2"
    assert session.config_id(OptConfig()) == "c1"        # known: not written again
    writer.dispatch(Dispatch(3, "r3", 13, 3.0))          # dispatched, never served
    writer.close()
    return session


def test_everything_committed_is_read_back_whole(journal_path):
    session = fill(journal_path)
    journal = read_journal(journal_path)
    assert journal is not None and journal.data == session.freeze()
    assert journal.started_unix == 1000.0 and dict(journal.context) == CONTEXT
    assert journal.next_seq == 4
    kinds = [json.loads(line)["kind"] for line in Path(journal_path).read_text().splitlines()]
    assert kinds.count("graph_breaks") == 1 and kinds.count("config") == 2


def test_the_journal_is_private(journal_path):
    assert os.stat(journal_path).st_mode & 0o777 == 0o600
    assert Path(journal_path).name.startswith("session-") and journal_path.endswith(".jsonl")


def test_a_line_torn_by_a_kill_is_skipped_and_the_next_engine_starts_a_fresh_line(journal_path):
    fill(journal_path)
    with open(journal_path, "ab") as handle:
        handle.write(b'{"kind":"record","value":{"id":"r9","se')          # killed mid-write
    writer = JournalWriter(journal_path)
    writer.write("notice", {"t_s": 9.0, "level": "error", "text": "after the tear"})
    writer.close()
    journal = read_journal(journal_path)
    assert [r.id for r in journal.data.records] == ["r0", "r1", "r2"]
    assert journal.data.notices[-1].text == "after the tear"


def test_a_restored_session_goes_on_and_keeps_its_earlier_graph_breaks(journal_path):
    fill(journal_path)
    earlier = read_journal(journal_path)
    session = JournaledSession(JournalWriter(journal_path), earlier.data)
    assert session.config_id(OptConfig(precision="bf16")) == "c2"      # ids go on
    assert session.config_id(OptConfig(compile="default")) == "c3"
    session.set_breaks(breaks(1))                        # a new engine's probe counts from 0
    session.add_record(record(4, "c3"))
    assert session.freeze().breaks == tuple(breaks(3))
    again = read_journal(journal_path)
    assert again.data == session.freeze()
    assert [r.seq for r in again.data.records] == [0, 1, 2, 4]


def test_merge_breaks_sums_counts_per_place():
    other = GraphBreakRecord("c2", "x", "y:1", 1)
    assert merge_breaks(breaks(2), [other, *breaks(1)]) == (*breaks(3), other)


def test_the_crash_fails_the_requests_held_and_is_marked_at_its_time(journal_path):
    fill(journal_path, started_unix=1000.0)
    journal = read_journal(journal_path)
    lost, notice = journal.crash_marks(EngineExit(1010.0, -9, "exited"), restarted=True)
    assert [(r.id, r.seq, r.config_id) for r in lost] == [("r3", 3, "c1")]
    assert lost[0].error == "lost: the engine died (exit code -9) before serving it"
    assert lost[0].end_s == 10.0 and lost[0].latency_ms == pytest.approx(7000.0)
    assert notice == Notice(10.0, "error", "engine restarted after it died (exit code -9); "
                                           "1 request(s) it held are recorded as failed")
    _, stopped = journal.crash_marks(EngineExit(1010.0, None, "no CUDA"), restarted=False)
    assert stopped.text.startswith("the engine stopped (no CUDA)")


def test_the_session_clock_goes_on_from_the_header():
    journal = Journal("x", time.time() - 100.0, {}, session_data({}))
    assert journal.clock().now_s() >= 100.0


def test_the_session_json_is_written_from_the_journal_alone(journal_path, tmp_path):
    fill(journal_path, started_unix=time.time() - 60.0)
    out = save_from_journal(journal_path, tmp_path / "down.json", EngineExit(time.time(), -9, "x"))
    document = read_document(out)
    data = session_data(document)
    assert [r.id for r in data.records] == ["r0", "r1", "r2", "r3"]
    assert data.records[-1].error.startswith("lost: the engine died (exit code -9)")
    assert data.notices[-1].text.startswith("the engine died (exit code -9)")
    assert document["model"] == {"name": "t5-tiny", "dtype": "fp32"}    # c1 served last
    assert document["trace"] == CONTEXT["trace"] and document["segments"]


def test_nothing_to_save_before_the_session_began(journal_path, tmp_path):
    writer = JournalWriter(journal_path)
    JournaledSession(writer).config_id(OptConfig())     # died before the header
    assert read_journal(journal_path) is None
    with pytest.raises(BadInput, match="nothing to save"):
        save_from_journal(journal_path, tmp_path / "x.json", None)
    assert not (tmp_path / "x.json").exists()


def test_a_journal_swapped_for_a_symlink_is_neither_written_nor_read(journal_path, tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("keep me")
    os.unlink(journal_path)
    os.symlink(victim, journal_path)
    with pytest.raises(OSError):
        JournalWriter(journal_path)
    with pytest.raises(BadInput, match="cannot read"):
        read_journal(journal_path)
    assert victim.read_text() == "keep me"


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs Linux's /dev/full")
def test_a_failed_write_stops_journaling_not_serving():
    writer = JournalWriter("/dev/full")                  # every write: no space left
    writer.write("notice", {})
    assert writer.error == "session journal /dev/full: No space left on device"
    writer.write("notice", {})                           # and quietly from then on
    writer.close()


def test_reading_a_journal_imports_no_torch(journal_path, tmp_path):
    fill(journal_path)
    code = (f"import sys; from probe.session_store.journal_reader import save_from_journal; "
            f"save_from_journal({journal_path!r}, {str(tmp_path / 'o.json')!r}, None); "
            f"print('torch' in sys.modules)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.stdout.strip() == "False", result.stderr


def test_a_header_section_that_is_not_an_object_is_left_out_and_the_rest_recovers(
        journal_path, tmp_path):
    writer = JournalWriter(journal_path)
    session = JournaledSession(writer)
    session.config_id(OptConfig())
    writer.header(1000.0, {**CONTEXT, "live": True, "model": ["t5-tiny"]})
    session.add_record(record(0))
    writer.close()
    journal = read_journal(journal_path)
    assert journal is not None and "live" not in journal.context and "model" not in journal.context
    saved = save_from_journal(journal_path, tmp_path / "out.json", None)
    assert [r.seq for r in session_data(read_document(saved)).records] == [0]
