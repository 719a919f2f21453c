"""Damaged copies of real files (the saved sessions of screenshots/sessions/ and the bench
fixture's runs, and a journal written from one of them as the engine writes it): every reader
either reads the copy or refuses it in one BadInput line, never a traceback; a session one
reader refuses, every reader refuses; what `snapshot recover` writes, every reader takes."""

from __future__ import annotations

import contextlib
import functools
import io
import json
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from infertop.cli import main
from probe.common.errors import BadInput
from probe.engine.state_files import new_journal
from probe.session_store.journal import CONTEXT_SECTIONS, JournalWriter
from probe.session_store.journal_reader import read_journal
from probe.session_store.snapshot import read_document, saved_session
from tests.probe.test_reader_fuzz import _mutated, _one_line_or_nothing, _raw

ROOT = Path(__file__).resolve().parents[2]
REAL = sorted([*(ROOT / "screenshots" / "sessions").glob("*.json"),
               *(ROOT / "tests" / "fixtures" / "bench-quick" / "runs").glob("*.json")])
FUZZ = settings(max_examples=30, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


@functools.lru_cache(maxsize=None)
def _real(path: Path) -> str:
    return path.read_text()


def test_the_real_files_are_there_and_every_reader_takes_them():
    assert len(REAL) >= 8
    for path in REAL:
        saved_session(read_document(path))


def _run(argv: list[str]) -> int:
    stderr = io.StringIO()
    with contextlib.redirect_stderr(stderr), contextlib.redirect_stdout(io.StringIO()) as said:
        status = main(argv)
    assert status in (0, 2), (argv, stderr.getvalue())
    _one_line_or_nothing(stderr.getvalue())
    assert not _raw(said.getvalue().replace("\n", "")), argv
    return status


@FUZZ
@given(data=st.data())
def test_a_damaged_real_session_is_read_or_refused_in_one_line_by_every_reader(data):
    source = data.draw(st.sampled_from(REAL))
    document = json.loads(_real(source))
    for _ in range(data.draw(st.integers(1, 3))):
        section = data.draw(st.sampled_from(sorted(document)))
        document[section] = _mutated(document[section], data)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "s.json"
        text = json.dumps(document)
        if data.draw(st.booleans()):                     # torn as well, by a full disk
            text = text[:data.draw(st.integers(0, len(text)))]
        path.write_text(text)
        statuses = [_run(argv) for argv in (
            ["snapshot", "show", str(path)], ["doctor", str(path)],
            ["doctor", "--json", str(path)],
            ["snapshot", "export", str(path), "--csv", "-o", str(Path(folder) / "e")])]
        assert len(set(statuses)) == 1, statuses        # one reader: all take it or none


def journal_lines(document: dict[str, Any]) -> list[tuple[str, Any]]:
    """The journal the engine would have written while serving `document`: its configs, its
    header, each request dispatched then recorded, its events, notices and accounts."""
    lines: list[tuple[str, Any]] = [
        ("config", {"config_id": cid, **entry}) for cid, entry in document["configs"].items()]
    lines.append(("session", {"started_unix": 1.7e9,
                              **{name: document.get(name) or {} for name in CONTEXT_SECTIONS}}))
    if document.get("slo") is not None:
        lines.append(("slo", document["slo"]))
    for record in document["requests"]:
        lines.append(("dispatch", {"seq": record["seq"], "request_id": record["id"],
                                   "input_tokens": record["input_tokens"],
                                   "arrival_s": record["arrival_s"]}))
        lines.append(("record", record))
    lines += [("compile_event", event) for event in document.get("compile_events", [])]
    lines += [("notice", notice) for notice in document.get("notices", [])]
    if document.get("graph_breaks"):
        lines.append(("graph_breaks", document["graph_breaks"]))
    lines += [("kv_pool", {"config_id": cid, "pool": pool})
              for cid, pool in document.get("kv_pools", {}).items()]
    lines += [("energy", {"config_id": cid, **energy})
              for cid, energy in document.get("energy", {}).items()]
    if document.get("compile_ledger"):
        lines.append(("compile_ledger", document["compile_ledger"]))
    return lines


def test_a_journal_of_a_real_session_recovers_its_records(tmp_path):
    document = json.loads(_real(REAL[0]))
    path = _journal(tmp_path, journal_lines(document))
    journal = read_journal(path)
    assert journal is not None and journal.unreadable == () and journal.repeated == ()
    assert len(journal.data.records) == len(document["requests"])


def _journal(folder: Path, lines: list[tuple[str, Any]], raw: list[str] | None = None) -> str:
    path = new_journal(folder / "state")
    writer = JournalWriter(path)
    for kind, value in lines:
        writer.write(kind, value)
    writer.close()
    if raw is not None:
        Path(path).write_bytes(("\n".join(raw) + "\n").encode("utf-8", "surrogatepass"))
    return path


@FUZZ
@given(data=st.data())
def test_a_damaged_journal_of_a_real_session_recovers_or_is_refused_in_one_line(data):
    source = data.draw(st.sampled_from(REAL))
    entries = journal_lines(json.loads(_real(source)))
    lines = [json.dumps({"kind": kind, "value": value}) for kind, value in entries]
    for _ in range(data.draw(st.integers(1, 4))):
        index = data.draw(st.integers(0, len(lines) - 1))
        how = data.draw(st.sampled_from(["mutate", "tear", "twice", "drop"]))
        if how == "mutate":
            with contextlib.suppress(ValueError):       # torn already: left as it is
                lines[index] = json.dumps(_mutated(json.loads(lines[index]), data))
        elif how == "tear":
            lines[index] = lines[index][:data.draw(st.integers(0, len(lines[index])))]
        elif how == "twice":
            lines.insert(index, lines[index])
        else:
            del lines[index]
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        path = _journal(tmp, [], lines)
        try:
            journal = read_journal(path)
        except BadInput as exc:
            _one_line_or_nothing(str(exc))
            journal = None
        if journal is not None:     # a request recorded twice is one request
            seqs = [r.seq for r in journal.data.records]
            assert len(seqs) == len(set(seqs))
        out = tmp / "out.json"
        if _run(["snapshot", "recover", path, "-o", str(out)]) == 0:
            recovered = saved_session(read_document(out))
            seqs = [r.seq for r in recovered.records]
            assert len(seqs) == len(set(seqs))
            assert _run(["snapshot", "show", str(out)]) == 0
        else:
            assert not out.exists()
