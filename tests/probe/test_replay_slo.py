"""`replay --slo`: the SLO reaches the session the run journals and saves (the journaled
session replaced the engine's own, and the SLO set on the old one was lost), so the saved
session's goodput is there and equals a recomputation from its records."""

from __future__ import annotations

import json

import pytest

from probe.contract.objective import parse_slo


@pytest.mark.slow
def test_replay_saves_its_slo_and_goodput(tmp_path):
    from infertop.cli import main
    out = tmp_path / "s.json"
    assert main(["replay", "--model", "t5-tiny", "--trace", "chat", "--device", "cpu",
                 "--threads", "1", "--requests", "3", "--speed", "50",
                 "--slo", "latency=5000s", "--out", str(out)]) == 0
    document = json.loads(out.read_text())
    assert document["slo"] == parse_slo("latency=5000s").as_dict()
    (segment,) = document["segments"]
    served = [r for r in document["requests"] if not r["error"]]
    assert segment["slo_attainment"] == len(served) / len(document["requests"])
