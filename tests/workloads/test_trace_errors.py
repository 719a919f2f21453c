"""Bad input: one clear error naming file:line and the field, or skipped and counted."""

import json
import os
import threading
from pathlib import Path

import pytest

from probe.common.errors import TraceError
from workloads.trace import load_trace, load_trace_with_report

GOOD = {"timestamp": 0, "input_length": 5, "output_length": 5}


def _jsonl(tmp_path: Path, rows: list) -> Path:
    path = tmp_path / "bad.jsonl"
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


@pytest.mark.parametrize("row, field, reason", [
    ({**GOOD, "timestamp": 1, "input_length": -3}, "input_length", "non-positive length"),
    ({**GOOD, "timestamp": 1, "output_length": 0}, "output_length", "non-positive length"),
    ({**GOOD, "timestamp": 1, "input_length": 2.5}, "input_length", "malformed row"),
    ({**GOOD, "timestamp": 1, "input_length": True}, "input_length", "malformed row"),
    ({**GOOD, "timestamp": "soon"}, "timestamp", "malformed row"),
    ({**GOOD, "timestamp": -1}, "timestamp", "malformed row"),
    ({"timestamp": 1, "input_length": 5}, "output_length", "malformed row"),
    ({"timestamp": 1, "output_length": 5}, "input_length", "malformed row"),
])
def test_bad_field_names_file_line_and_field(tmp_path: Path, row: dict, field: str, reason: str) -> None:
    path = _jsonl(tmp_path, [GOOD, row, {**GOOD, "timestamp": 2}])
    with pytest.raises(TraceError) as caught:
        load_trace(path)
    assert str(caught.value).startswith(f"{path}:2: field '{field}'")
    assert caught.value.reason == reason
    trace, report = load_trace_with_report(path, skip_bad=True)
    assert len(trace) == 2
    assert report.skipped == ((reason, 1),)


def test_invalid_json_line_names_the_line(tmp_path: Path) -> None:
    path = _jsonl(tmp_path, [GOOD, '{"timestamp": 1, "input_length": 5,', [1, 2]])
    with pytest.raises(TraceError, match=rf"^{path}:2: not valid JSON"):
        load_trace(path)
    trace, report = load_trace_with_report(path, skip_bad=True)
    assert len(trace) == 1 and report.skipped_total == 2


def test_timestamps_going_backwards(tmp_path: Path) -> None:
    path = _jsonl(tmp_path, [GOOD, {**GOOD, "timestamp": 500}, {**GOOD, "timestamp": 400},
                             {**GOOD, "timestamp": 500}])
    with pytest.raises(TraceError, match=rf"^{path}:3: field 'timestamp': goes backwards") as caught:
        load_trace(path)
    assert caught.value.reason == "timestamp going backwards"
    trace, report = load_trace_with_report(path, skip_bad=True)
    assert [r.timestamp_ms for r in trace.requests] == [0, 500, 500]  # ties are fine
    assert report.skipped == (("timestamp going backwards", 1),)


@pytest.mark.parametrize("content", ["", "\n\n"])
def test_empty_trace_is_an_error_even_when_skipping(tmp_path: Path, content: str) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_text(content)
    for skip in (False, True):
        with pytest.raises(TraceError, match="empty trace"):
            load_trace(path, skip_bad=skip)


def test_all_rows_bad_and_skipped_is_an_empty_trace(tmp_path: Path) -> None:
    path = _jsonl(tmp_path, [{**GOOD, "input_length": 0}])
    with pytest.raises(TraceError, match=r"empty trace.*1 bad rows skipped"):
        load_trace(path, skip_bad=True)


def test_csv_missing_column_lists_what_was_found(write_csv) -> None:
    path = write_csv("t.csv", ["timestamp", "input_length"], [[0, 5]])
    with pytest.raises(TraceError, match=rf"^{path}:1: missing column 'output_length' \(found: timestamp, input_length"):
        load_trace(path, skip_bad=True)  # not skippable: the whole file is wrong


def test_csv_bad_value_and_wrong_field_count(write_csv) -> None:
    path = write_csv("t.csv", ["timestamp", "input_length", "output_length"],
                     [[0, 5, 5], [1, "five", 5], [2, 5], [3, 5, 5]])
    with pytest.raises(TraceError, match=rf"^{path}:3: field 'input_length': expected a positive whole number"):
        load_trace(path)
    trace, report = load_trace_with_report(path, skip_bad=True)
    assert [r.timestamp_ms for r in trace.requests] == [0, 3]
    assert report.skipped_total == 2


# -- any bytes: each a named error with the file and line, never a traceback ---------------------
GOOD_LINE = json.dumps(GOOD) + "\n"


UTF16 = ":1: is UTF-16 (by its byte-order mark); convert it: iconv -f UTF-16 -t UTF-8"
BINARY = ":1: contains a NUL byte: not a text file"
LATIN1 = ":3: not UTF-8 text (byte 0xe9)"


@pytest.mark.parametrize("suffix, data, expected", [
    (".jsonl", GOOD_LINE.encode("utf-16"), UTF16),
    (".csv", "timestamp,input_length,output_length\n".encode("utf-16"), UTF16),
    (".jsonl", b"\x7fELF\x02\x01\x00\x00", BINARY),
    (".csv", b"\x7fELF\x02\x01\x00\x00", BINARY),
    (".jsonl", GOOD_LINE.encode() * 2 + b'{"text": "caf\xe9"}\n', LATIN1),
    (".csv", b"timestamp,input_length,output_length\n0,5,5\n2,5,\xe9\n", LATIN1),
])
def test_undecodable_bytes_name_the_file_and_line(tmp_path: Path, suffix: str, data: bytes, expected: str) -> None:
    path = tmp_path / f"bad{suffix}"
    path.write_bytes(data)
    for skip in (False, True):  # a file in the wrong encoding is not a bad row: never skipped
        with pytest.raises(TraceError) as caught:
            load_trace(path, skip_bad=skip)
        assert str(caught.value).startswith(f"{path}{expected}")


def test_json_nested_100k_deep_is_a_named_row_error(tmp_path: Path) -> None:
    path = _jsonl(tmp_path, [GOOD, "[" * 100_000 + "]" * 100_000])
    with pytest.raises(TraceError, match=rf"^{path}:2: not valid JSON here: nested too deeply"):
        load_trace(path)
    assert len(load_trace(path, skip_bad=True)) == 1


def test_a_number_too_long_for_python_is_a_named_row_error(tmp_path: Path) -> None:
    path = _jsonl(tmp_path, [GOOD, '{"timestamp": 1, "input_length": ' + "9" * 5000 + ', "output_length": 5}'])
    with pytest.raises(TraceError, match=rf"^{path}:2: not valid JSON here: a number with too many digits"):
        load_trace(path)


@pytest.mark.parametrize("field, value, message", [
    ("input_length", 1e30, "expected at most 10,000,000 tokens, got 1e+30"),
    ("output_length", 10**40, "expected at most 10,000,000 tokens"),
    ("input_length", "NaN", "expected a JSON number, got the string 'NaN'"),
    ("timestamp", 1e300, "from 0 to 1e+15), got 1e+300"),
    ("timestamp", "inf", "got the string 'inf'"),
    ("text", "\ud800 lone", "holds an unpaired surrogate (\\ud800 at character 0)"),
    ("id", "\udfff", "holds an unpaired surrogate"),
])
def test_huge_and_non_finite_values_name_the_field(tmp_path: Path, field: str, value, message: str) -> None:
    row = {**GOOD, "timestamp": 1, field: value}
    if field == "text":
        del row["input_length"]
    path = _jsonl(tmp_path, [GOOD, row])
    with pytest.raises(TraceError) as caught:
        load_trace(path)
    assert str(caught.value).startswith(f"{path}:2: field '{field}': ") and message in str(caught.value)


def test_a_trace_spanning_more_than_the_bound_is_refused_at_that_row(tmp_path: Path) -> None:
    far = 1e8 * 1000 + 1  # one millisecond past MAX_SPAN_S after the first request
    path = _jsonl(tmp_path, [{**GOOD, "timestamp": 5}, {**GOOD, "timestamp": far - 1 + 5},
                             {**GOOD, "timestamp": far + 5}])
    with pytest.raises(TraceError, match=rf"^{path}:3: field 'timestamp': 1e\+08 s after the first "
                                         r"request; a trace may span at most 1e\+08 s") as caught:
        load_trace(path)
    assert caught.value.reason == "timestamp out of range"
    assert len(load_trace(path, skip_bad=True)) == 2


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/null"])
def test_a_device_is_a_named_error_not_a_hang(device: str) -> None:
    if not Path(device).exists():
        pytest.skip(f"no {device} here")
    with pytest.raises(TraceError, match=rf"^{device}: is a device, not a trace or snapshot file$"):
        load_trace(device)


def test_a_fifo_is_read_as_a_stream(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)
    writer = threading.Thread(target=lambda: fifo.write_text(GOOD_LINE * 3))
    writer.start()
    trace = load_trace(fifo)
    writer.join(timeout=10)
    assert len(trace) == 3
