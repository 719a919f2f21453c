"""Fuzzing every trace reader, importer and the --buckets parser: whatever the bytes, the
answer is a TraceError (what the CLI prints as one line, exit 2) or a trace that every later
step takes (stats, fitting, writing and reading back) — never any other exception."""

from __future__ import annotations

import csv
import io
import json
import math
from pathlib import Path
from typing import Any, Callable

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from probe.common.errors import TraceError
from workloads.buckets import parse_bucket_edges
from workloads.fitting import fit_to_model
from workloads.importers import import_trace
from workloads.rows import MAX_LENGTH, MAX_SPAN_S
from workloads.trace import load_trace, write_trace
from workloads.trace_records import Trace
from workloads.trace_stats import trace_stats

FUZZ = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# Any character, lone surrogates included (JSON escapes them; a UTF-8 writer cannot take them).
any_text = st.text(st.characters(exclude_categories=()), max_size=12)
numbers = st.one_of(
    st.integers(-5, 600), st.integers(-10**40, 10**40),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([1e300, 1e30, -0.0, 1e14, 1e15, 1e16, 2.5, MAX_LENGTH, MAX_LENGTH + 1]))
scalars = st.one_of(st.none(), st.booleans(), numbers, any_text,
                    numbers.map(str), st.sampled_from(["", " 12 ", "1e30", "nan", "0x10", "١٢"]))
json_values = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(any_text, inner, max_size=3)), max_leaves=6)


def _deep(depth: int) -> str:
    return "[" * depth + "]" * depth


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("fuzz")


def _write(folder: Path, name: str, data: bytes | str) -> Path:
    path = folder / name
    path.write_bytes(data if isinstance(data, bytes) else data.encode("utf-8", "surrogatepass"))
    return path


def assert_usable(trace: Trace, folder: Path) -> None:
    """What "a valid result" means: bounded, ordered, finite, and every later step takes it."""
    assert trace.requests
    times = trace.timestamps_ms()
    assert all(math.isfinite(t) and t >= 0 for t in times)
    assert times == sorted(times) and times[-1] - times[0] <= MAX_SPAN_S * 1000
    assert all(1 <= n <= MAX_LENGTH for n in trace.input_lengths() + trace.output_lengths())
    stats = trace_stats(trace, buckets=3)
    assert stats["requests"] == len(trace.requests)
    fitted, _ = fit_to_model(trace)
    out = folder / "roundtrip.jsonl"
    write_trace(fitted, out)
    assert load_trace(out).input_lengths() == fitted.input_lengths()


def read_or_refuse(read: Callable[[], tuple[Trace, Any] | Trace], folder: Path) -> None:
    try:
        result = read()
    except TraceError as error:
        assert str(error) and "\n" not in str(error)  # one line for `infertop: error: ...`
        event("refused")
        return
    event("read")
    assert_usable(result[0] if isinstance(result, tuple) else result, folder)


# -- infertop's own format ----------------------------------------------------------------------
native_rows = st.dictionaries(
    st.sampled_from(["timestamp", "input_length", "output_length", "text", "id", "tag", "hash_ids"]),
    json_values, max_size=6)
good_rows = st.fixed_dictionaries({
    "timestamp": st.integers(0, 10**6), "input_length": st.integers(1, 600),
    "output_length": st.integers(1, 600)})
one_bad_field = st.tuples(good_rows, st.sampled_from(["timestamp", "input_length", "output_length", "text", "id"]),
                          st.one_of(numbers, json_values)).map(lambda t: {**t[0], t[1]: t[2]})
jsonl_lines = st.one_of(
    good_rows.map(json.dumps), good_rows.map(json.dumps), one_bad_field.map(json.dumps),
    native_rows.map(json.dumps), any_text,
    st.integers(1, 100_000).map(_deep), st.just(""))


@FUZZ
@given(lines=st.lists(jsonl_lines, max_size=6), skip_bad=st.booleans())
def test_jsonl_reader(folder: Path, lines: list[str], skip_bad: bool) -> None:
    path = _write(folder, "t.jsonl", "\n".join(lines))
    read_or_refuse(lambda: load_trace(path, skip_bad=skip_bad), folder)


@FUZZ
@given(times=st.lists(st.one_of(st.floats(0, 2e15), st.integers(0, 10**16)), min_size=1, max_size=4),
       suffix=st.sampled_from([".jsonl", ".csv"]))
def test_far_apart_timestamps(folder: Path, times: list[float], suffix: str) -> None:
    rows = [[t, 5, 5] for t in sorted(times)]
    text = (_csv(["timestamp", "input_length", "output_length"], rows) if suffix == ".csv" else
            "\n".join(json.dumps(dict(zip(("timestamp", "input_length", "output_length"), r))) for r in rows))
    path = _write(folder, f"far{suffix}", text)
    read_or_refuse(lambda: load_trace(path), folder)


@FUZZ
@given(data=st.binary(max_size=400), suffix=st.sampled_from([".jsonl", ".csv"]))
def test_any_bytes(folder: Path, data: bytes, suffix: str) -> None:
    path = _write(folder, f"b{suffix}", data)
    read_or_refuse(lambda: load_trace(path, skip_bad=True), folder)


@FUZZ
@given(encoding=st.sampled_from(["utf-16", "utf-16-le", "utf-32", "latin-1", "cp1252"]),
       rows=st.lists(good_rows, min_size=1, max_size=3), suffix=st.sampled_from([".jsonl", ".csv"]))
def test_other_encodings(folder: Path, encoding: str, rows: list[dict], suffix: str) -> None:
    text = "\n".join(json.dumps({**r, "text": "café"}) for r in rows)
    path = _write(folder, f"e{suffix}", text.encode(encoding))
    read_or_refuse(lambda: load_trace(path), folder)


# -- CSV ----------------------------------------------------------------------------------------
good_cells = st.integers(1, 600).map(str)
csv_cells = st.one_of(good_cells, good_cells, good_cells, scalars.map(str), any_text)


def _csv(header: list[str], rows: list[list[str]]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(header)
    writer.writerows(rows)
    return buffer.getvalue()


def csv_tables(columns: list[str]) -> st.SearchStrategy[str]:
    """Mostly the right columns in any order (some dropped, some added), cells mostly numbers."""
    header = st.one_of(st.permutations(columns), st.permutations(columns), st.lists(
        st.sampled_from([*columns, "extra", ""]), min_size=1, max_size=len(columns) + 1))
    return header.flatmap(lambda names: st.lists(
        st.one_of(st.lists(good_cells, min_size=len(names), max_size=len(names)),
                  st.lists(csv_cells, min_size=len(names) - 1, max_size=len(names) + 1)),
        max_size=5).map(lambda rows: _csv(list(names), rows)))


@FUZZ
@given(text=st.one_of(csv_tables(["timestamp", "input_length", "output_length"]),
                      csv_tables(["timestamp", "input_length", "output_length", "text", "id"]),
                      any_text), skip_bad=st.booleans())
def test_csv_reader(folder: Path, text: str, skip_bad: bool) -> None:
    path = _write(folder, "t.csv", text)
    read_or_refuse(lambda: load_trace(path, skip_bad=skip_bad), folder)


# -- importers ----------------------------------------------------------------------------------
azure_times = st.one_of(
    st.datetimes().map(lambda d: d.strftime("%Y-%m-%d %H:%M:%S.%f") + "0"), any_text)
azure_tables = st.lists(st.tuples(azure_times, csv_cells, csv_cells), max_size=5).map(
    lambda rows: _csv(["TIMESTAMP", "ContextTokens", "GeneratedTokens"], [list(r) for r in rows]))
burst_seconds = st.one_of(st.decimals(allow_nan=True, allow_infinity=True).map(str),
                          st.sampled_from(["1e999999", "1e-999999", "sNaN", "-0", "12.5"]))
burst_tables = st.lists(st.tuples(burst_seconds, any_text, csv_cells, csv_cells), max_size=5).map(
    lambda rows: _csv(["Timestamp", "Model", "Request tokens", "Response tokens"], [list(r) for r in rows]))


@FUZZ
@given(fmt_text=st.one_of(
    st.tuples(st.just("azure"), st.one_of(azure_tables, csv_tables(["TIMESTAMP", "ContextTokens", "GeneratedTokens"]))),
    st.tuples(st.just("burstgpt"), st.one_of(burst_tables, csv_tables(["Timestamp", "Request tokens", "Response tokens"]))),
    st.tuples(st.just("mooncake"), st.lists(jsonl_lines, max_size=5).map("\n".join)),
    st.tuples(st.sampled_from(["azure", "burstgpt", "mooncake", "sharegpt"]), any_text),
), skip_bad=st.booleans(), sort=st.booleans())
def test_table_importers(folder: Path, fmt_text: tuple[str, str], skip_bad: bool, sort: bool) -> None:
    fmt, text = fmt_text
    path = _write(folder, f"import-{fmt}.txt", text)
    read_or_refuse(lambda: import_trace(fmt, path, skip_bad=skip_bad, sort=sort), folder)


good_pair = st.tuples(any_text, any_text).map(lambda texts: [
    {"from": "human", "value": "say " + texts[0]}, {"from": "gpt", "value": "ok " + texts[1]}])
turns = st.fixed_dictionaries(
    {"from": st.one_of(st.sampled_from(["human", "gpt", "user", "assistant", "system"]), json_values)},
    optional={"value": st.one_of(any_text, json_values)})
conversations = st.one_of(
    st.fixed_dictionaries({"conversations": good_pair}, optional={"id": json_values}),
    st.fixed_dictionaries({"conversations": good_pair.flatmap(
        lambda pair: st.lists(turns, max_size=2).map(lambda more: pair + more))}),
    st.fixed_dictionaries({"conversations": st.lists(turns, max_size=4)}, optional={"id": json_values}),
    json_values)


@FUZZ
@given(document=st.one_of(st.lists(conversations, max_size=4).map(json.dumps),
                          st.integers(1, 100_000).map(_deep), any_text),
       skip_bad=st.booleans(),
       rate=st.one_of(st.floats(0.01, 100), st.floats(allow_nan=True, allow_infinity=True)))
def test_sharegpt_importer(folder: Path, document: str, skip_bad: bool, rate: float) -> None:
    path = _write(folder, "share.json", document)
    read_or_refuse(lambda: import_trace("sharegpt", path, skip_bad=skip_bad, rate=rate), folder)


# -- --buckets ----------------------------------------------------------------------------------
edge_lists = st.lists(st.one_of(st.integers(-3, 10**12).map(str), any_text, st.just(" 64 ")),
                      max_size=5).map(",".join)


@FUZZ
@given(text=st.one_of(edge_lists, any_text))
def test_bucket_edges(text: str) -> None:
    try:
        edges = parse_bucket_edges(text)
    except TraceError as error:
        assert str(error).startswith("--buckets: ")
        return
    assert edges and list(edges) == sorted(set(edges))
    assert all(1 <= e <= MAX_LENGTH for e in edges)
