"""`infertop doctor SESSION.json --verify`: a t5-tiny burst the doctor answers with
batching=continuous, the step measured alternated against the config it would replace; and the
sessions --verify refuses (no next step, a model folder gone) in one line with exit 2."""

from __future__ import annotations

import json
import math
from pathlib import Path
from types import MappingProxyType

import numpy as np
import pytest

from infertop.cli import main
from probe.contract.options import OptConfig, parse_opts
from probe.contract.session import ConfigEntry, SessionData
from probe.session_store.snapshot import read_document, saved_session, snapshot_document
from tests.probe.doctor_records import record

KEYS = {"change", "requests", "metrics", "verdict", "requests_to_tell", "prediction_held"}


def burst(path: Path, n: int) -> Path:
    """`n` requests within n ms: far above one-at-a-time capacity, so the tail is the queue."""
    path.write_text("".join(json.dumps({"timestamp": i, "input_length": 20,
                                        "output_length": 6}) + "\n" for i in range(n)))
    return path


def test_verify_measures_the_next_step_against_the_config_it_replaces(tmp_path, capsys):
    session, runs = tmp_path / "burst.json", tmp_path / "runs"
    assert main(["replay", "--model", "t5-tiny", "--trace", str(burst(tmp_path / "b.jsonl", 10)),
                 "--device", "cpu", "--threads", "1", "--max-output", "6",
                 "--out", str(session)]) == 0
    capsys.readouterr()
    assert main(["doctor", str(session), "--json", "--verify", "--verify-requests", "6",
                 "--verify-passes", "2", "--verify-runs", str(runs)]) == 0
    out = json.loads(capsys.readouterr().out)
    step = out["segments"][-1]["next_step"]
    verify = out["verify"]
    assert set(verify) == KEYS
    assert verify["change"] == step["options"] == {"batching": "continuous"}
    assert verify["requests"] == {"a": 12, "b": 12}      # 6 requests × 2 runs an arm
    assert verify["verdict"] in ("better", "worse", "no difference yet")
    assert isinstance(verify["prediction_held"], bool)   # the step predicted a p95

    # the arms, read back from the runs' own sessions: each run served one config
    arms: dict[str, list] = {"a": [], "b": []}
    for path in sorted(runs.glob("*.json")):
        data = saved_session(read_document(path))
        (options,) = [e.options for e in data.configs.values()]
        arms["b" if options.batching == "continuous" else "a"].extend(data.records)
    assert [len(arms["a"]), len(arms["b"])] == [12, 12]
    for name, q in (("p50_ms", 50), ("p95_ms", 95), ("p99_ms", 99)):
        a, b = (float(np.percentile([r.latency_ms for r in arms[k] if r.ok], q)) for k in "ab")
        m = verify["metrics"][name]
        assert math.isclose(m["a"], a) and math.isclose(m["b"], b)
        assert math.isclose(m["delta"], b - a)
        lo, hi = m["ci95"]
        assert lo <= m["delta"] <= hi
    assert verify["metrics"]["compile_s"]["ci95"] is None


def _save(path: Path, records, model: str, **configs) -> Path:
    data = SessionData(records=tuple(records), configs=MappingProxyType(
        {cid: ConfigEntry(cid, parse_opts(opts)) for cid, opts in configs.items()}))
    document = snapshot_document(data, environment={"device": "cpu"},
                                 model={"name": model, "source": model}, trace={})
    path.write_text(json.dumps(document))
    return path


def test_a_session_without_a_next_step_is_refused_in_one_line(tmp_path, capsys):
    calm = [record(i, arrival_s=2.0 * i) for i in range(20)]     # healthy: all decode
    path = _save(tmp_path / "calm.json", calm, "t5-tiny", c1=())
    assert main(["doctor", str(path), "--verify", "--json"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    (line,) = captured.err.strip().splitlines()
    assert "no next step for c1" in line


def test_a_model_folder_that_is_gone_is_refused_in_one_line(tmp_path, capsys):
    queued = [record(i, arrival_s=0.001 * i, start_s=0.3 * i) for i in range(20)]
    gone = str(tmp_path / "moved-model")
    path = _save(tmp_path / "queued.json", queued, gone, c1=())
    assert OptConfig().batching == "off"        # the doctor's step: batching=continuous
    assert main(["doctor", str(path), "--verify"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    (line,) = captured.err.strip().splitlines()
    assert "moved-model" in line and "--verify needs the session's model" in line


def test_a_device_this_machine_lacks_is_refused_in_one_line(tmp_path, capsys):
    import torch
    if torch.cuda.is_available():
        pytest.skip("this machine has the session's device")
    queued = [record(i, arrival_s=0.001 * i, start_s=0.3 * i) for i in range(20)]
    path = _save(tmp_path / "gpu.json", queued, "t5-tiny", c1=())
    document = json.loads(path.read_text())
    document["environment"]["device"] = "cuda:0"
    path.write_text(json.dumps(document))
    assert main(["doctor", str(path), "--verify"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    (line,) = captured.err.strip().splitlines()
    assert "session's device (cuda:0)" in line


# -- progress says what is true (issue 50) -----------------------------------------------------

def test_verify_progress_never_says_no_slo_for_a_session_with_one():
    from probe.tune.evaluate import _rate_measured, _Side
    said: list[str] = []
    _rate_measured(_Side(OptConfig(), "B"), said.append, slo=True)
    _rate_measured(_Side(OptConfig(), "A"), said.append, slo=False)
    assert "no SLO" not in said[0] and "no goodput" in said[0]
    assert said[1].endswith("no SLO, so no goodput")
