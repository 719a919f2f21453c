"""Issue 50's readers: recovery never double-counts or relabels, and every reader checks every
range of what it reads (a session's environment and its config-keyed sections, tune.json for
`--resume`, gpu-check's budget), each refusal one line naming the file and the field."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import pytest

from infertop.cli import main
from probe.common.errors import BadInput
from probe.contract.options import OptConfig
from probe.session_store.journal_reader import read_journal
from probe.session_store.recover import recover
from probe.session_store.snapshot import read_document, saved_session
from tests.probe.test_reliability_round3 import append, journal_of, one_error_line, record, saved

# -- recovery never double-counts ----------------------------------------------------------------


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


# -- recovery never relabels ----------------------------------------------------------------------


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


# -- every reader checks every range: the session ----------------------------------------------


def _session_with(tmp_path: Path, **sections) -> Path:
    path = saved(tmp_path)
    document = json.loads(path.read_text())
    for name, value in sections.items():
        document[name] = value
    path.write_text(json.dumps(document))
    return path


@pytest.mark.parametrize("environment, said", [
    ({"device": "cpu", "torch_threads": 1000000000},
     "environment.torch_threads: expected a number of threads from 1 to 1024, got 1000000000"),
    ({"device": "cpu", "torch_threads": 1e9},
     "environment.torch_threads: expected a whole number from 1 to 1024, got 1000000000.0"),
    ({"device": "cpu", "torch_threads": 0}, "environment.torch_threads: expected a number of "
                                            "threads from 1 to 1024, got 0"),
    ({"device": "cpu", "cpu_count": -2}, "environment.cpu_count: expected a number of CPUs from 1 to 65536, got -2"),
    ({"device": 7}, "environment.device: expected a string, got 7"),
])
@pytest.mark.parametrize("command", [["doctor"], ["doctor", "--verify"], ["snapshot", "show"]])
def test_a_session_environment_out_of_range_is_one_line_before_anything_loads(
        tmp_path, capsys, environment, said, command):
    path = _session_with(tmp_path, environment=environment)
    argv = [*command[:2], str(path), *command[2:]] if command[0] == "snapshot" \
        else [*command, str(path)]
    assert main(argv) == 2
    line = one_error_line(capsys.readouterr().err)
    assert line.endswith(said) and str(path) in line, line


@pytest.mark.parametrize("section, value, said", [
    ("settings", {"bucket_edges": ["x"]},
     "settings.bucket_edges[0]: expected a whole number from 1 to 65536, got 'x'"),
    ("settings", {"bucket_edges": 5}, "settings.bucket_edges: expected a list of whole numbers"),
    ("settings", {"max_batch": "8"}, "settings.max_batch: expected a whole number from 0 to "
                                     "1e+06, got '8'"),
    ("settings", {"compile_backend": 3}, "settings.compile_backend: expected a string, got 3"),
    ("model", {"name": 5}, "model.name: expected a string, got 5"),
])
def test_what_the_doctor_and_load_serve_or_show_with_is_checked_too(tmp_path, capsys, section,
                                                                      value, said):
    """--load built its view with int(edge) and int(max_batch): a ValueError traceback."""
    path = _session_with(tmp_path, **{section: value})
    for command in (["snapshot", "show", str(path)], ["doctor", str(path)]):
        assert main(command) == 2
        assert said in one_error_line(capsys.readouterr().err)


@pytest.mark.parametrize("energy, said", [
    ({"c1": {"source": "RAPL", "idle_j": -100.0}},
     "energy.c1.idle_j: expected joules from 0 to 1e+12, got -100"),
    ({"c9": {"source": "RAPL", "idle_j": 1.0}},
     "energy.'c9' is not one of the session's configs (c1)"),
    ({"c1": {"source": "RAPL", "busy_s": 1e300}},
     "energy.c1.busy_s: expected a time in seconds from 0 to 1e+09, got 1e+300"),
])
def test_the_energy_section_is_refused_as_the_compile_ledger_is(tmp_path, capsys, energy, said):
    path = _session_with(tmp_path, energy=energy)
    for command in (["snapshot", "show", str(path)], ["doctor", str(path)]):
        assert main(command) == 2
        assert one_error_line(capsys.readouterr().err).endswith(said)


def test_a_kv_pool_of_an_undeclared_config_or_past_its_total_is_refused(tmp_path, capsys):
    pool = {"layout": "paged", "block_tokens": 16, "blocks_total": 4, "blocks_peak": 9,
            "block_bytes": 1024}
    path = _session_with(tmp_path, kv_pools={"c1": pool})
    assert main(["snapshot", "show", str(path)]) == 2
    assert one_error_line(capsys.readouterr().err).endswith(
        "kv_pools.c1.blocks_peak: expected at most blocks_total (4), got 9")
    path = _session_with(tmp_path, kv_pools={"c2": {**pool, "blocks_peak": 1}})
    assert main(["snapshot", "show", str(path)]) == 2
    assert "kv_pools.'c2' is not one of the session's configs" in \
        one_error_line(capsys.readouterr().err)


def test_a_journal_header_with_absurd_threads_recovers_without_its_environment(tmp_path):
    from probe.engine.state_files import new_journal
    from probe.session_store.journal import JournaledSession, JournalWriter
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
