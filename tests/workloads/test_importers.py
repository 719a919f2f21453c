import datetime as dt
import json
import re
from pathlib import Path

import numpy as np
import pytest

from probe.common.errors import TraceError
from workloads.importers import import_trace


def _azure_rows(n: int, seed: int = 0) -> tuple[list[list[object]], list[int], np.ndarray, np.ndarray]:
    """Rows with 100 ns timestamps; also the exact offsets in units of 100 ns."""
    rng = np.random.default_rng(seed)
    ticks = np.cumsum(rng.integers(0, 50_000_000, n))  # up to 5 s apart, in 100 ns
    ticks -= ticks[0]
    start = dt.datetime(2023, 11, 16, 18, 17, 3)
    inputs = rng.integers(1, 20_000, n)
    outputs = rng.integers(1, 2_000, n)
    rows = []
    for tick, i, o in zip(ticks.tolist(), inputs.tolist(), outputs.tolist()):
        seconds, rest = divmod(tick, 10_000_000)
        stamp = (start + dt.timedelta(seconds=seconds)).strftime("%Y-%m-%d %H:%M:%S")
        rows.append([f"{stamp}.{rest:07d}", i, o])
    return rows, ticks.tolist(), inputs, outputs


def test_azure_reads_every_row_with_exact_relative_times(write_csv) -> None:
    rows, ticks, inputs, outputs = _azure_rows(30_000)
    path = write_csv("AzureLLMInferenceTrace_conv.csv", ["TIMESTAMP", "ContextTokens", "GeneratedTokens"], rows)
    trace, report = import_trace("azure", path)
    assert report.rows_read == len(trace) == 30_000
    assert trace.input_lengths() == inputs.tolist()
    assert trace.output_lengths() == outputs.tolist()
    got_s = np.array(trace.timestamps_ms()) / 1000.0
    want_s = np.array(ticks, dtype=np.float64) / 1e7
    assert np.max(np.abs(got_s - want_s)) < 1e-9


def test_azure_columns_are_found_by_name_not_position(write_csv) -> None:
    path = write_csv("a.csv", ["GeneratedTokens", "Extra", "TIMESTAMP", "ContextTokens"], [
        [7, "x", "2023-11-16 18:17:03.9799600", 100],
        [8, "y", "2023-11-16 18:17:05.0000000", 200],
    ])
    trace, report = import_trace("azure", path)
    assert [(r.input_length, r.output_length) for r in trace.requests] == [(100, 7), (200, 8)]
    assert trace.requests[1].timestamp_ms == pytest.approx(1020.04, abs=1e-9)
    assert any("2023-11-16 18:17:03.979960000" in note for note in report.notes)


def test_azure_bad_timestamp_names_line_and_field(write_csv) -> None:
    path = write_csv("a.csv", ["TIMESTAMP", "ContextTokens", "GeneratedTokens"],
                     [["2023-11-16 18:17:03.9799600", 1, 1], ["16/11/2023 18:17", 1, 1]])
    with pytest.raises(TraceError, match=re.escape(f"{path}:3: field 'TIMESTAMP'")):
        import_trace("azure", path)


BURST_OLD = ["Timestamp", "Model", "Request tokens", "Response tokens", "Total tokens", "Log Type"]
BURST_NEW = ["Timestamp", "Session ID", "Elapsed time", "Model", "Request tokens", "Response tokens",
             "Total tokens", "Log Type"]


@pytest.mark.parametrize("header", [BURST_OLD, BURST_NEW], ids=["v1.1", "with-session"])
def test_burstgpt_drops_and_counts_failures(write_csv, header: list[str]) -> None:
    rng = np.random.default_rng(1)
    n = 20_000
    seconds = np.cumsum(rng.integers(0, 4, n)) + 5
    requests = rng.integers(1, 3000, n)
    responses = rng.integers(0, 600, n)
    responses[rng.random(n) < 0.05] = 0
    rows = []
    for s, q, r in zip(seconds.tolist(), requests.tolist(), responses.tolist()):
        values = {"Timestamp": s, "Session ID": "abc", "Elapsed time": 1.5, "Model": "ChatGPT",
                  "Request tokens": q, "Response tokens": r, "Total tokens": q + r, "Log Type": "Conversation log"}
        rows.append([values[c] for c in header])
    path = write_csv("BurstGPT_1.csv", header, rows)
    trace, report = import_trace("burstgpt", path)
    kept = responses > 0
    failed = int((~kept).sum())
    assert report.rows_read == n
    assert len(trace) == n - failed
    assert f"dropped {failed} failed requests (0 response tokens)" in report.notes
    assert trace.input_lengths() == requests[kept].tolist()
    assert trace.output_lengths() == responses[kept].tolist()
    first = seconds[kept][0]
    assert trace.timestamps_ms() == [float((s - first) * 1000) for s in seconds[kept].tolist()]
    assert {r.tag for r in trace.requests} == {"ChatGPT"}


def test_burstgpt_unsorted_rows_error_or_sort(write_csv) -> None:
    path = write_csv("b.csv", BURST_OLD, [[10, "GPT-4", 5, 5, 10, "API log"], [8, "GPT-4", 6, 6, 12, "API log"],
                                          [12, "GPT-4", 7, 7, 14, "API log"]])
    with pytest.raises(TraceError, match="goes backwards"):
        import_trace("burstgpt", path)
    trace, report = import_trace("burstgpt", path, sort=True)
    assert trace.input_lengths() == [6, 5, 7]
    assert trace.timestamps_ms() == [0.0, 2000.0, 4000.0]
    assert "sorted by Timestamp: 2 rows were out of order" in report.notes


def test_mooncake_import_rebases_and_ignores_hash_ids(tmp_path: Path) -> None:
    path = tmp_path / "mooncake_trace.jsonl"
    rows = [{"timestamp": 1000 + 7 * i, "input_length": 6000 + i, "output_length": 500, "hash_ids": [0, i]}
            for i in range(5000)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    trace, report = import_trace("mooncake", path)
    assert len(trace) == report.rows_read == 5000
    assert trace.timestamps_ms()[:3] == [0.0, 7.0, 14.0]
    assert trace.input_lengths()[-1] == 10_999


def test_mooncake_requires_input_length(tmp_path: Path) -> None:
    path = tmp_path / "m.jsonl"
    path.write_text('{"timestamp": 0, "output_length": 5, "text": "hi there"}\n')
    with pytest.raises(TraceError, match=r":1: field 'input_length': missing"):
        import_trace("mooncake", path)


def _sharegpt(tmp_path: Path) -> Path:
    data = [
        {"id": "c0", "conversations": [
            {"from": "human", "value": "What is T5?"},
            {"from": "gpt", "value": "A text-to-text transformer from Google."},
            {"from": "human", "value": "Thanks"},
            {"from": "gpt", "value": ""},
        ]},
        {"id": "c1", "conversations": [
            {"from": "system", "value": "be brief"},
            {"from": "human", "value": "Translate hello to German"},
            {"from": "gpt", "value": "Hallo"},
            {"from": "gpt", "value": "(a second reply is not a new request)"},
        ]},
        {"conversations": [{"from": "gpt", "value": "unprompted"}]},
    ]
    path = tmp_path / "sharegpt.json"
    path.write_text(json.dumps(data))
    return path


def test_sharegpt_pairs_keep_text_and_count_reply_tokens(tmp_path: Path) -> None:
    path = _sharegpt(tmp_path)
    words = lambda text: len(text.split())  # noqa: E731
    trace, report = import_trace("sharegpt", path, count_tokens=words, rate=2.0, seed=3)
    assert [(r.text, r.input_length, r.output_length, r.id) for r in trace.requests] == [
        ("What is T5?", 3, 5, "c0:0"),
        ("Translate hello to German", 4, 1, "c1:1"),
    ]
    assert trace.timestamps_ms()[0] == 0.0
    assert "dropped 1 pairs with an empty prompt or reply" in report.notes
    assert any("Poisson at 2 rps, seed 3" in note for note in report.notes)


def test_sharegpt_arrivals_follow_rate_and_seed(tmp_path: Path) -> None:
    conversations = [{"conversations": [{"from": "human", "value": f"q {i}"}, {"from": "gpt", "value": "a b"}]}
                     for i in range(4000)]
    path = tmp_path / "s.json"
    path.write_text(json.dumps(conversations))
    a, _ = import_trace("sharegpt", path, rate=4.0, seed=1)
    b, _ = import_trace("sharegpt", path, rate=4.0, seed=1)
    c, _ = import_trace("sharegpt", path, rate=4.0, seed=2)
    assert a == b and a.timestamps_ms() != c.timestamps_ms()
    gaps = np.diff(np.array(a.timestamps_ms()) / 1000.0)
    assert gaps.mean() == pytest.approx(0.25, rel=0.06)
    assert gaps.std() / gaps.mean() == pytest.approx(1.0, rel=0.1)  # exponential gaps


def test_sharegpt_invalid_json_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    path.write_text('[\n{"conversations": []},\n{"conversations": [}\n]')
    with pytest.raises(TraceError, match=re.escape(f"{path}:3: not valid JSON")):
        import_trace("sharegpt", path)


def test_unknown_format_lists_the_choices(tmp_path: Path) -> None:
    path = tmp_path / "x"
    path.write_text("")
    with pytest.raises(TraceError, match="azure, burstgpt, mooncake, sharegpt"):
        import_trace("vllm", path)
