import json

import numpy as np
import pytest

from workloads.buckets import plan_buckets, powers_of_two_plan
from workloads.importers import import_trace
from workloads.trace import load_trace
from workloads.trace_stats import trace_stats


def _check_against_numpy(stats: dict, times_s: np.ndarray, inputs: np.ndarray, outputs: np.ndarray) -> None:
    gaps = np.diff(times_s)
    assert stats["requests"] == len(inputs)
    assert stats["duration_s"] == pytest.approx(times_s[-1] - times_s[0], abs=1e-9)
    assert stats["rate_rps"] == pytest.approx((len(times_s) - 1) / (times_s[-1] - times_s[0]))
    assert stats["interarrival_cv"] == pytest.approx(np.std(gaps) / np.mean(gaps))
    for key, column in (("input", inputs), ("output", outputs)):
        p50, p90, p99 = np.percentile(column, [50, 90, 99])
        assert stats[key] == {"p50": p50, "p90": p90, "p99": p99, "max": column.max()}
    assert stats["distinct_input_lengths"] == len(np.unique(inputs))


def test_stats_of_a_raw_azure_file_agree_with_numpy_on_its_columns(write_csv, cli, capsys) -> None:
    rng = np.random.default_rng(5)
    n = 20_000
    ticks = np.cumsum(rng.integers(0, 30_000_000, n))  # 100 ns units
    inputs = rng.lognormal(7, 1, n).astype(int) + 1
    outputs = rng.integers(1, 700, n)
    rows = []
    for tick, i, o in zip(ticks.tolist(), inputs.tolist(), outputs.tolist()):
        seconds, rest = divmod(tick, 10_000_000)
        minutes, seconds = divmod(seconds, 60)
        hours, minutes = divmod(minutes, 60)
        rows.append([f"2023-11-16 {hours:02d}:{minutes:02d}:{seconds:02d}.{rest:07d}", i, o])
    path = write_csv("azure.csv", ["TIMESTAMP", "ContextTokens", "GeneratedTokens"], rows)
    assert cli("stats", str(path), "--format", "azure", "--json", "--buckets", "3") == 0
    stats = json.loads(capsys.readouterr().out)
    _check_against_numpy(stats, ticks / 1e7, inputs, outputs)
    assert stats["buckets"] == list(plan_buckets(inputs, 3).edges)
    assert len(stats["buckets"]) == 3


def test_stats_json_keys_and_bucket_figures() -> None:
    trace = load_trace("chat")
    stats = trace_stats(trace, buckets=4)
    assert {"requests", "duration_s", "rate_rps", "interarrival_cv", "input", "output", "distinct_input_lengths",
            "buckets", "padding_waste", "padding_waste_pct"} <= set(stats)
    json.dumps(stats)  # plain JSON types only
    inputs = np.array(trace.input_lengths())
    padded = sum(min(e for e in stats["buckets"] if e >= x) for x in inputs.tolist())
    assert stats["padding_waste"] == pytest.approx((padded - inputs.sum()) / padded)
    assert stats["padding_waste_pct"] == pytest.approx(100 * stats["padding_waste"])
    powers = powers_of_two_plan(inputs)
    assert stats["powers_of_two"]["padding_waste"] == pytest.approx(powers.waste_fraction)
    assert stats["optimal_same_shapes"]["padded_tokens"] <= powers.padded_tokens
    times = np.array(trace.timestamps_ms()) / 1000
    _check_against_numpy(stats, times, inputs, np.array(trace.output_lengths()))


def test_single_request_has_no_rate(make_trace) -> None:
    stats = trace_stats(make_trace([0.0]))
    assert stats["duration_s"] == 0.0 and stats["rate_rps"] is None and stats["interarrival_cv"] is None


def test_imported_then_stats_matches_the_importer_output(write_csv) -> None:
    path = write_csv("b.csv", ["Timestamp", "Model", "Request tokens", "Response tokens", "Total tokens", "Log Type"],
                     [[5, "ChatGPT", 472, 18, 490, "Conversation log"], [45, "ChatGPT", 1087, 230, 1317, "c"],
                      [118, "GPT-4", 417, 0, 417, "c"], [185, "ChatGPT", 1360, 647, 2007, "c"]])
    trace, _ = import_trace("burstgpt", path)
    stats = trace_stats(trace)
    assert stats["requests"] == 3 and stats["duration_s"] == 180.0
    assert stats["input"]["max"] == 1360
