"""`snapshot recover` and the journal's reader: recovery keeps what it can read (issue 37),
never counts a line written twice twice and never relabels a config (issue 50)."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import pytest

from infertop.cli import main
from probe.common.errors import BadInput
from probe.contract.options import OptConfig
from probe.engine.state_files import new_journal
from probe.session_store.journal import JournaledSession, JournalWriter
from probe.session_store.journal_reader import read_journal
from probe.session_store.recover import recover
from probe.session_store.snapshot import read_document, saved_session
from tests.probe.saved_sessions import append, journal_of, one_error_line, record


def test_a_record_line_without_config_id_is_skipped_and_counted(tmp_path):
    path = journal_of(tmp_path)
    bad = {k: v for k, v in record(3).__dict__.items() if k != "config_id"}
    append(path, json.dumps({"kind": "record", "value": bad}))
    append(path, json.dumps({"kind": "record", "value": record(4).__dict__}))
    text = recover(path, str(tmp_path / "out.json"))
    assert text.splitlines()[0] == \
        "recovered 4 records; 1 line unreadable: line 9, record: missing config_id"
    assert len(saved_session(read_document(tmp_path / "out.json")).records) == 4


@pytest.mark.parametrize("value", [
    {"seq": "x", "request_id": 5, "input_tokens": [], "arrival_s": {}},
    [1, 2, 3],
    {"seq": 9, "request_id": "r9", "input_tokens": 10, "arrival_s": float("nan")},
    {"seq": 9, "request_id": "r9", "input_tokens": 10, "arrival_s": 1e308},
    {"seq": 9, "request_id": "r9"},
])
def test_a_dispatch_of_wrong_types_is_one_counted_line_and_the_file_reads_back(tmp_path, value):
    path = journal_of(tmp_path)
    append(path, json.dumps({"kind": "dispatch", "value": value}))
    out = tmp_path / "out.json"
    text = recover(path, str(out))
    assert "1 line unreadable: line 9, dispatch" in text
    assert "argument after **" not in text and "Dispatch()" not in text
    saved_session(read_document(out))          # infertop's own readers take what it wrote
    assert main(["snapshot", "show", str(out)]) == 0


def test_the_cli_recover_says_what_it_skipped(tmp_path, capsys):
    path = journal_of(tmp_path)
    append(path, '{"kind": "record", "value": {"torn', '{"kind": "notice", "value": 3}')
    assert main(["snapshot", "recover", path, "-o", str(tmp_path / "o.json")]) == 0
    out = capsys.readouterr().out
    assert out.startswith("recovered 3 records; 2 lines unreadable: line 9, not a whole JSON "
                          "line (torn by a kill?); line 10, notice: expected an object, got 3")


def _lines(path: str) -> list[str]:
    return Path(path).read_text().splitlines()


def test_a_record_line_written_twice_is_kept_once_and_said(tmp_path):
    path = journal_of(tmp_path, served=6)
    twice = next(line for line in _lines(path) if '"seq":3,' in line and '"record"' in line)
    append(path, twice)
    out = tmp_path / "out.json"
    text = recover(path, str(out))
    assert text.splitlines()[0] == ("recovered 6 records; 1 line repeated: line 15, record "
                                    "seq 3 (id 'r3') written again (first on line 10): kept once")
    assert text.splitlines()[1].endswith(": 6 served, 0 failed")
    ids = [r.id for r in saved_session(read_document(out)).records]
    assert sorted(ids) == [f"r{i}" for i in range(6)]


def test_a_second_record_of_one_request_is_not_a_second_request(tmp_path):
    """Another record for a seq already recorded (other figures): the first is kept."""
    path = journal_of(tmp_path, served=2)
    append(path, json.dumps({"kind": "record", "value": asdict(record(1, latency_ms=9.0))}))
    journal = read_journal(path)
    assert journal is not None
    assert [r.latency_ms for r in journal.data.records] == [500.0, 500.0]
    assert journal.repeated == ((7, "record seq 1 (id 'r1') written again (first on line 6): "
                                    "kept once"),)


def test_a_dispatch_written_twice_is_one_request_lost_not_two(tmp_path):
    path = journal_of(tmp_path, served=2)
    dispatch = json.dumps({"kind": "dispatch", "value": {"seq": 2, "request_id": "r2",
                                                         "input_tokens": 10, "arrival_s": 2.0}})
    append(path, dispatch, dispatch)
    out = tmp_path / "out.json"
    text = recover(path, str(out))
    assert "1 line repeated: line 8, dispatch seq 2 written again (first on line 7)" in text
    records = saved_session(read_document(out)).records
    assert len(records) == 3 and [r.seq for r in records if r.error] == [2]


def test_a_compile_event_written_twice_is_counted_once(tmp_path):
    path = journal_of(tmp_path)
    event = {"compile_id": "0/0", "kind": "compile", "function": "forward", "start_s": 0.5,
             "duration_s": 1.0, "reason": "first call", "request_id": "r0",
             "config_id": "c1"}
    line = json.dumps({"kind": "compile_event", "value": event})
    append(path, line, line)
    journal = read_journal(path)
    assert journal is not None and len(journal.data.events) == 1
    assert journal.repeated[0][1].startswith("compile_event the same event '0/0' written again")


def _declare(path: str, config_id: str, options: OptConfig) -> None:
    append(path, json.dumps({"kind": "config",
                             "value": {"config_id": config_id, **options.as_dict(),
                                       "notes": []}}))


def test_a_config_declared_again_with_other_options_is_refused_in_one_line(tmp_path, capsys):
    path = journal_of(tmp_path)
    _declare(path, "c1", OptConfig(compile="default"))
    append(path, json.dumps({"kind": "record", "value": asdict(record(3))}))
    out = tmp_path / "out.json"
    with pytest.raises(BadInput) as refused:
        read_journal(path)
    assert str(refused.value) == (
        f"session journal {path}: line 9 declares config 'c1' again with other options "
        f"(compile=default) than line 1 (baseline); which records each served cannot be "
        f"told, so nothing is recovered from it")
    assert main(["snapshot", "recover", path, "-o", str(out)]) == 2
    assert "declares config 'c1' again" in one_error_line(capsys.readouterr().err)
    assert not out.exists()


def test_a_config_declared_again_alike_is_taken_once(tmp_path):
    path = journal_of(tmp_path)
    _declare(path, "c1", OptConfig())
    journal = read_journal(path)
    assert journal is not None and list(journal.data.configs) == ["c1"]
    assert journal.repeated == () and journal.unreadable == ()


def test_a_journal_header_with_absurd_threads_recovers_without_its_environment(tmp_path):
    path = new_journal(tmp_path / "state")
    writer = JournalWriter(path)
    JournaledSession(writer).config_id(OptConfig())
    writer.header(1000.0, {"environment": {"device": "cpu", "torch_threads": 10 ** 9},
                           "model": {"name": "t5-tiny"}})
    writer.close()
    journal = read_journal(path)
    assert journal is not None and "environment" not in journal.context
    assert journal.unreadable == ((2, "session header: environment.torch_threads: expected a "
                                      "number of threads from 1 to 1024, got 1000000000"),)
