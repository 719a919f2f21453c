"""The headless CLI: a replay writes the snapshot schema; bad input is one line and exit 2."""

import json
from pathlib import Path

import numpy as np
import pytest

from infertop.cli import main

SEGMENT_KEYS = {"config_id", "requests", "latency_ms", "ttft_ms", "tpot_ms", "throughput_rps",
                "tokens_per_s", "compiles", "recompiles", "compile_s", "graph_breaks", "graphs",
                "kv_cache_peak_bytes"}
REQUEST_KEYS = {"id", "config_id", "input_tokens", "padded_tokens", "output_tokens", "arrival_s",
                "start_s", "end_s", "queue_ms", "compile_stall_ms", "ttft_ms", "latency_ms",
                "kv_cache_bytes", "kv_cache_used_bytes", "error"}


def test_replay_writes_the_snapshot_schema(tmp_path: Path):
    out = tmp_path / "run.json"
    code = main(["replay", "--model", "t5-tiny", "--trace", "chat", "--requests", "4",
                 "--speed", "1000", "--device", "cpu", "--opt", "decode=fullgraph",
                 "--max-output", "16", "--out", str(out)])
    assert code == 0
    doc = json.loads(out.read_text())
    assert doc["schema_version"] == 1
    assert {"python", "torch", "transformers", "device_name"} <= set(doc["environment"])
    assert doc["model"]["name"] == "t5-tiny" and doc["model"]["dtype"] == "fp32"
    assert {"d_model", "d_kv", "num_heads", "num_layers", "num_decoder_layers",
            "vocab_size"} <= set(doc["model"]["config"])
    assert doc["trace"]["name"] == "chat"
    assert doc["configs"]["c1"]["decode"] == "fullgraph"
    assert len(doc["requests"]) == 4 and REQUEST_KEYS <= set(doc["requests"][0])
    segment = doc["segments"][0]
    assert SEGMENT_KEYS <= set(segment)
    latencies = [r["latency_ms"] for r in doc["requests"]]
    assert segment["latency_ms"]["p95"] == pytest.approx(np.percentile(latencies, 95))
    assert not list(tmp_path.glob(".*.tmp"))  # atomic: no temporary left behind


@pytest.mark.parametrize("argv, message", [
    (["--opt", "compile=fast"], "choose one of: off, default, reduce-overhead, max-autotune"),
    (["--opt", "warp=on"], "valid keys: compile"),
    (["--model", "/nowhere/model"], "is not a preset"),
    (["--trace", "/nowhere/trace.jsonl"], "trace.jsonl"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path: Path, capsys, argv, message):
    out = tmp_path / "never.json"
    code = main(["replay", "--model", "t5-tiny", "--device", "cpu", "--requests", "1",
                 "--out", str(out), *argv])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert err[-1].startswith("infertop: error:") and message in err[-1]
    assert not out.exists()


def test_a_bad_out_is_refused_before_the_trace_or_the_model(tmp_path: Path, capsys):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    code = main(["replay", "--model", "/nowhere/model", "--trace", "/nowhere/trace.jsonl",
                 "--out", str(blocker / "run.json")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1
    assert err[0] == f"infertop: error: --out {blocker / 'run.json'}: cannot write: {blocker} is a file, not a folder"
    assert [p.name for p in tmp_path.iterdir()] == ["a-file"]
