import json
from pathlib import Path

import pytest

from workloads.tokens import estimate_tokens
from workloads.trace import BUILTIN_TRACES, load_trace, load_trace_with_report, write_trace
from workloads.trace_records import Trace, TraceRequest


def test_write_then_load_gives_the_same_requests(tmp_path: Path) -> None:
    trace = Trace("x", (
        TraceRequest(0.0, 12, 7, id="a", tag="chat"),
        TraceRequest(1234.5678, 300, 40, text="héllo wörld", id="b"),
        TraceRequest(1234.5678, 1, 1),
    ))
    path = tmp_path / "x.jsonl"
    write_trace(trace, path)
    loaded = load_trace(path)
    assert loaded.requests == trace.requests
    assert loaded.name == "x" and loaded.source == str(path)


def test_written_rows_use_the_mooncake_keys_and_integer_ms_when_whole(tmp_path: Path) -> None:
    trace = Trace("x", (TraceRequest(1500.0, 3, 4), TraceRequest(1500.25, 3, 4)))
    path = tmp_path / "x.jsonl"
    write_trace(trace, path)
    first, second = (json.loads(line) for line in path.read_text().splitlines())
    assert first == {"timestamp": 1500, "input_length": 3, "output_length": 4}
    assert isinstance(first["timestamp"], int) and second["timestamp"] == 1500.25
    write_trace(trace, path, integer_ms=True)
    assert [json.loads(line)["timestamp"] for line in path.read_text().splitlines()] == [1500, 1500]


def test_mooncake_extra_keys_are_ignored(tmp_path: Path) -> None:
    path = tmp_path / "m.jsonl"
    path.write_text('{"timestamp": 0, "input_length": 655, "output_length": 52, "hash_ids": [46, 47]}\n\n'
                    '{"timestamp": 10535, "input_length": 672, "output_length": 26, "hash_ids": [46]}\n')
    trace = load_trace(path)
    assert [(r.timestamp_ms, r.input_length, r.output_length) for r in trace.requests] == [
        (0.0, 655, 52), (10535.0, 672, 26)]


def test_csv_with_the_same_columns_in_any_order(write_csv) -> None:
    path = write_csv("t.csv", ["tag", "output_length", "timestamp", "input_length", "id"],
                     [["a", 5, 0, 10, "r1"], ["b", 6, 250.5, 11, ""]])
    trace = load_trace(path)
    assert trace.requests == (TraceRequest(0.0, 10, 5, id="r1", tag="a"), TraceRequest(250.5, 11, 6, tag="b"))


def test_text_without_input_length_is_counted_by_the_tokenizer(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps({"timestamp": 0, "output_length": 3, "text": "one two three four"}) + "\n"
                    + json.dumps({"timestamp": 1, "output_length": 3, "text": "x", "input_length": 99}) + "\n")
    default = load_trace(path)
    assert default.requests[0].input_length == estimate_tokens("one two three four")
    assert default.requests[1].input_length == 99  # the file's own count wins
    custom = load_trace(path, count_tokens=lambda text: len(text))
    assert custom.requests[0].input_length == len("one two three four")
    assert custom.requests[0].text == "one two three four"


@pytest.mark.parametrize("text, low, high", [
    ("", 0, 0),
    ("   ", 0, 0),
    ("hello", 1, 2),
    ("the quick brown fox jumps over the lazy dog", 11, 13),
    ("数" * 40, 30, 40),  # no spaces: the byte count decides
])
def test_token_estimate_is_in_a_plausible_range(text: str, low: int, high: int) -> None:
    assert low <= estimate_tokens(text) <= high


@pytest.mark.parametrize("name", BUILTIN_TRACES)
def test_builtin_traces_load_by_name(name: str) -> None:
    trace, report = load_trace_with_report(name)
    assert trace.name == name and trace.source == f"builtin:{name}"
    # the generated ones have the generator's 2000; the real one keeps every request it had
    assert len(trace) == report.rows_read == (19366 if name == "azure-conv" else 2000)
    assert report.skipped == ()


def test_unknown_name_lists_the_builtins() -> None:
    from probe.common.errors import TraceError

    with pytest.raises(TraceError, match="chat, summarize, translate, batch"):
        load_trace("no-such-trace")
