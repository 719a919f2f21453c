"""Reading saved sessions (`snapshot show`/`compare`, `--load`): any file is a BadInput
naming what is wrong and where (file, line, section, record, field) or a session that shows."""

from __future__ import annotations

import copy
import json
import typing
from dataclasses import fields
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from infertop.cli import main
from probe.common.errors import BadInput
from probe.contract.options import OptConfig
from probe.contract.records import CompileEvent, GraphBreakRecord, Notice, RequestRecord
from probe.contract.session import ConfigEntry, SessionData
from probe.session_store.snapshot import read_document, session_data, snapshot_document
from probe.session_store.snapshot_report import compare, show

FUZZ = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _sample(hint: Any, name: str) -> Any:
    """A plausible value for a record field, from its annotation (so new fields are covered)."""
    kind = (typing.get_args(hint) or (hint,))[0]
    if typing.get_origin(kind) is tuple:
        return (1, 2)
    if name == "config_id":
        return "c1"
    return {float: 1.5, int: 3, str: "x"}.get(kind)


def _record(cls: type, **values: Any) -> Any:
    hints = typing.get_type_hints(cls)
    return cls(**{f.name: values.get(f.name, _sample(hints[f.name], f.name)) for f in fields(cls)})


def valid_document() -> dict[str, Any]:
    data = SessionData(
        records=(_record(RequestRecord, id="r0", seq=0), _record(RequestRecord, id="r1", seq=1)),
        events=(_record(CompileEvent, kind="compile"),),
        breaks=(_record(GraphBreakRecord),),
        configs=MappingProxyType({"c1": ConfigEntry("c1", OptConfig(compile="default"), ("a note",))}),
        notices=(_record(Notice, level="info"),))
    document = snapshot_document(data, environment={"device": "cpu", "torch": "x"},
                                 model={"name": "t5-tiny", "parameters": 10, "dtype": "fp32"},
                                 trace={"name": "chat"})
    return json.loads(json.dumps(document))  # exactly what a file holds


def _write(path: Path, document: Any) -> Path:
    path.write_text(json.dumps(document))
    return path


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("snapshots")


def test_a_valid_document_reads_back_and_shows(folder: Path) -> None:
    path = _write(folder / "ok.json", valid_document())
    data = session_data(read_document(path))
    assert [r.id for r in data.records] == ["r0", "r1"] and data.records[0].tokens == (1, 2)
    assert data.configs["c1"].options.compile == "default" and data.configs["c1"].notes == ("a note",)
    assert "c1" in show(str(path)) and "compared:" in compare(str(path), str(path))


def _mutated(change) -> dict[str, Any]:
    document = valid_document()
    change(document)
    return document


@pytest.mark.parametrize("change, message", [
    (lambda d: d.update(requests={"r0": 1}), "not an infertop session: 'requests' must be a JSON list, got dict"),
    (lambda d: d.update(model=["t5"]), "'model' must be a JSON object, got list"),
    (lambda d: d["requests"][1].pop("seq"), "requests[1]: field 'seq' is missing"),
    (lambda d: d["requests"][0].update(latency_ms="slow"), "requests[0].latency_ms: expected a finite number, got 'slow'"),
    (lambda d: d["requests"][0].update(latency_ms=float("nan")), "requests[0].latency_ms: expected a finite number, got nan"),
    (lambda d: d["requests"][0].update(input_tokens=True), "requests[0].input_tokens: expected a whole number, got True"),
    (lambda d: d["requests"][0].update(kv_cache_bytes=10**30), "requests[0].kv_cache_bytes: expected a whole number"),
    (lambda d: d["requests"][0].update(ttft_ms=[1]), "requests[0].ttft_ms: expected a finite number or null"),
    (lambda d: d["requests"][0].update(tokens=[1, "a"]), "requests[0].tokens[1]: expected a whole number, got 'a'"),
    (lambda d: d["requests"].append(7), "requests[2]: expected an object, got int"),
    (lambda d: d["compile_events"][0].update(start_s={}), "compile_events[0].start_s: expected a finite number"),
    (lambda d: d["configs"].update(c2=[]), "configs.c2: expected an object, got list"),
    (lambda d: d["configs"]["c1"].update(compile="fast"), "configs.c1: option compile='fast' is not valid"),
    (lambda d: d["configs"]["c1"].update(notes="text"), "configs.c1.notes: expected a list, got 'text'"),
    (lambda d: d["model"].update(name="\ud800"), "model.name: holds an unpaired surrogate"),
])
def test_the_wrong_shape_names_the_field(folder: Path, change, message: str) -> None:
    path = _write(folder / "bad.json", _mutated(change))
    for read in (lambda: show(str(path)), lambda: compare(str(path), str(path))):
        with pytest.raises(BadInput) as caught:
            read()
        assert str(caught.value).startswith(f"snapshot {path}") and message in str(caught.value)


@pytest.mark.parametrize("data, message", [
    (b"\xff\xfe{\x00}\x00", ":1: is UTF-16"),
    (b'{"schema_version": 1, "model": {"name": "caf\xe9"}}', ":1: not UTF-8 text (byte 0xe9)"),
    (b"\x00\x01binary", ":1: contains a NUL byte"),
    (b'{"schema_version": 1, "x": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", ": not valid JSON here: nested too deeply"),
    (b'{"schema_version": 1,\n "x": ' + b"1" * 5000 + b"}", ": not valid JSON here: a number with too many digits"),
    (b'{"schema_version": 1,\n "x": }', ":2: not valid JSON (Expecting value"),
    (b'{"schema_version": true}', ": schema_version True is not supported"),
])
def test_any_bytes_are_a_named_error(folder: Path, data: bytes, message: str) -> None:
    path = folder / "bytes.json"
    path.write_bytes(data)
    with pytest.raises(BadInput) as caught:
        read_document(path)
    assert str(caught.value).startswith(f"snapshot {path}{message}")


def test_a_device_is_refused_not_read_forever() -> None:
    if not Path("/dev/zero").exists():
        pytest.skip("no /dev/zero here")
    with pytest.raises(BadInput, match="^snapshot /dev/zero: is a device"):
        read_document("/dev/zero")


@pytest.mark.parametrize("argv", [["snapshot", "show"], ["snapshot", "compare", "OTHER"]])
def test_the_cli_prints_one_line_and_exits_2(folder: Path, capsys, argv: list[str]) -> None:
    bad = _write(folder / "cli-bad.json", _mutated(lambda d: d["requests"][0].update(end_s="x")))
    good = _write(folder / "cli-good.json", valid_document())
    args = [str(bad) if a == "OTHER" else a for a in argv]
    code = main([*args, str(good) if "OTHER" in argv else str(bad)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1
    assert err[0].startswith("infertop: error: snapshot ") and "requests[0].end_s" in err[0]


# -- fuzz: mutate a valid document anywhere, or hand over arbitrary JSON -------------------------
any_text = st.text(st.characters(exclude_categories=()), max_size=8)
scalars = st.one_of(st.none(), st.booleans(), st.integers(-10**20, 10**20), any_text,
                    st.floats(allow_nan=True, allow_infinity=True))
json_values = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(any_text, inner, max_size=3)), max_leaves=5)


def _places(document: Any, where: tuple = ()) -> list[tuple]:
    """Every path into the document: section, record, field."""
    found = [where] if where else []
    children = (document.items() if isinstance(document, dict)
                else enumerate(document) if isinstance(document, list) else ())
    for key, child in children:
        found += _places(child, (*where, key))
    return found


PLACES = _places(valid_document())


def _replace(document: Any, where: tuple, value: Any, delete: bool) -> Any:
    document = copy.deepcopy(document)
    parent = document
    for key in where[:-1]:
        parent = parent[key]
    if delete and isinstance(parent, dict):
        del parent[where[-1]]
    else:
        parent[where[-1]] = value
    return document


def _show_or_refuse(path: Path) -> None:
    try:
        shown, compared = show(str(path)), compare(str(path), str(path))
    except BadInput as error:
        assert str(error).startswith(f"snapshot {path}") and "\n" not in str(error)
        event("refused")
        return
    event("shown")
    assert str(path) in shown and "compared:" in compared
    shown.encode("utf-8")  # printable on a UTF-8 terminal
    compared.encode("utf-8")


@FUZZ
@given(where=st.sampled_from(PLACES), value=json_values, delete=st.booleans())
def test_fuzz_mutated_documents(folder: Path, where: tuple, value: Any, delete: bool) -> None:
    path = _write(folder / "fuzz.json", _replace(valid_document(), where, value, delete))
    _show_or_refuse(path)


@FUZZ
@given(document=st.one_of(json_values, st.dictionaries(
    st.sampled_from(["schema_version", "requests", "configs", "model", "environment", "segments"]),
    st.one_of(st.just(1), json_values), max_size=4)))
def test_fuzz_arbitrary_json(folder: Path, document: Any) -> None:
    _show_or_refuse(_write(folder / "any.json", document))


@FUZZ
@given(data=st.binary(max_size=300))
def test_fuzz_arbitrary_bytes(folder: Path, data: bytes) -> None:
    path = folder / "raw.json"
    path.write_bytes(data)
    _show_or_refuse(path)
