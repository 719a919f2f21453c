"""Bad input: one clear error naming file:line and the field, or skipped and counted."""

import json
from pathlib import Path

import pytest

from workloads.errors import TraceError
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
