"""bench's report: a doctor row for each run, read from the run's snapshot."""

from __future__ import annotations

import json

from probe.bench.doctor_section import doctor_by_run, doctor_markdown
from probe.session_store.snapshot import snapshot_document
from tests.probe.doctor_records import serial
from tests.probe.test_diagnosis import session


def test_each_runs_snapshot_gives_its_verdict_and_next_step(tmp_path):
    document = snapshot_document(session(serial([(0.01, 0.5)] * 30)), environment={},
                                 model={}, trace={})
    (tmp_path / "runs").mkdir()
    (tmp_path / "runs" / "E1-eager.json").write_text(json.dumps(document))
    runs = {"E1-eager": {"snapshot": "runs/E1-eager.json"},
            "E1-also": {"snapshot": "runs/E1-eager.json"},      # served together: one snapshot
            "E2-failed": {"error": "boom"}}
    doctor = doctor_by_run(tmp_path, runs)
    assert list(doctor) == ["runs/E1-eager.json"]
    (entry,) = doctor["runs/E1-eager.json"]
    assert entry["top_cause"] == "queue" and entry["verdict"].startswith("p95 ")
    lines = doctor_markdown({"doctor": doctor})
    assert lines[0] == "## The doctor, run by run"
    assert any("`runs/E1-eager.json` | c1 | queue |" in line and "batching=continuous" in line
               for line in lines)
    assert doctor_markdown({}) == []
