"""Random journals and sessions (torn lines, wrong types, control characters, absurd numbers):
every reader either reads or refuses in one line, never a traceback, never a raw control
character, and what `snapshot recover` writes every reader takes."""

from __future__ import annotations

import contextlib
import io
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from infertop.cli import main
from probe.common.errors import BadInput
from probe.session_store.journal_reader import read_journal
from probe.session_store.snapshot import read_document, saved_session
from tests.probe.saved_sessions import journal_of, saved

FUZZ = settings(max_examples=40, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
CONTROL = "\x00\x07\x1b\x9b\u202e\u2028\x7f\n\r"
CHARACTERS = st.characters() | st.sampled_from(CONTROL)       # lone surrogates included
values = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-2 ** 70, max_value=2 ** 70)
    | st.floats(allow_nan=True, allow_infinity=True) | st.sampled_from([0, -1, 1e308, -1e308])
    | st.text(alphabet=CHARACTERS, max_size=12),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner,
                                                                max_size=3),
    max_leaves=6)


def _raw(text: str) -> bool:
    return any(c in text for c in CONTROL if c not in "\n")


def _mutated(document: Any, data: st.DataObject) -> Any:
    """`document` with one value somewhere in it replaced, or one key removed."""
    if isinstance(document, dict) and document:
        key = data.draw(st.sampled_from(sorted(document)))
        action = data.draw(st.sampled_from(["replace", "delete", "descend"]))
        if action == "delete":
            return {k: v for k, v in document.items() if k != key}
        if action == "descend" and isinstance(document[key], (dict, list)) and document[key]:
            return {**document, key: _mutated(document[key], data)}
        return {**document, key: data.draw(values)}
    if isinstance(document, list) and document:
        index = data.draw(st.integers(0, len(document) - 1))
        return [*document[:index], _mutated(document[index], data), *document[index + 1:]]
    return data.draw(values)


def _one_line_or_nothing(text: str) -> None:
    lines = [line for line in text.splitlines() if line]
    assert len(lines) <= 1 and "Traceback" not in text, text
    assert not _raw(text), text


@FUZZ
@given(data=st.data())
def test_every_journal_is_read_or_refused_in_one_line_and_recovers_to_a_readable_file(data):
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        path = journal_of(tmp)
        lines = Path(path).read_text().splitlines()
        for _ in range(data.draw(st.integers(1, 4))):
            index = data.draw(st.integers(0, len(lines) - 1))
            how = data.draw(st.sampled_from(["mutate", "tear", "garbage"]))
            if how == "mutate":
                try:
                    entry = json.loads(lines[index])
                except ValueError:      # torn already
                    continue
                lines[index] = json.dumps(_mutated(entry, data))
            elif how == "tear":
                lines[index] = lines[index][:data.draw(st.integers(0, len(lines[index])))]
            else:
                garbage = data.draw(st.text(alphabet=CHARACTERS, max_size=20))
                lines[index] = garbage.replace("\n", " ")
        # a lone surrogate drawn raw is written as the bytes a broken writer would leave
        Path(path).write_bytes(("\n".join(lines) + "\n").encode("utf-8", "surrogatepass"))
        try:
            read_journal(path)
        except BadInput as exc:
            assert "\n" not in str(exc)
        out = tmp / "out.json"
        stderr = io.StringIO()
        with contextlib.redirect_stderr(stderr), contextlib.redirect_stdout(io.StringIO()) as said:
            status = main(["snapshot", "recover", path, "-o", str(out)])
        assert status in (0, 2)
        _one_line_or_nothing(stderr.getvalue())
        assert not _raw(said.getvalue())
        if status == 0:
            saved_session(read_document(out))       # every reader takes what recover wrote
        else:
            assert not out.exists()


@FUZZ
@given(data=st.data())
def test_every_session_is_read_or_refused_in_one_line_by_every_reader(data):
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        path = saved(tmp)
        document = json.loads(path.read_text())
        section = data.draw(st.sampled_from(["requests", "configs", "notices", "compile_events",
                                             "model", "slo", "environment"]))
        document[section] = _mutated(document.get(section), data)
        path.write_text(json.dumps(document))
        statuses = []
        for argv in (["snapshot", "show", str(path)], ["doctor", str(path)],
                     ["doctor", "--json", str(path)],
                     ["snapshot", "export", str(path), "--csv", "-o", str(tmp / "e")]):
            stderr = io.StringIO()
            with contextlib.redirect_stderr(stderr), \
                    contextlib.redirect_stdout(io.StringIO()) as said:
                statuses.append(main(argv))
            assert statuses[-1] in (0, 2), (argv, stderr.getvalue())
            _one_line_or_nothing(stderr.getvalue())
            assert not _raw(said.getvalue().replace("\n", "")), argv
        # one reader: a session one command refuses, every command refuses
        assert len(set(statuses)) == 1, statuses
        for name in os.listdir(tmp):
            assert not name.endswith(".tmp")
