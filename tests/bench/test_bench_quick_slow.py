"""`infertop bench --quick` end to end on t5-tiny: E2 and E4. Dynamo's eager backend: graph
breaks, guards, recompiles and compiled graphs are dynamo's, the same as under inductor, without
inductor's code generation (minutes on 2 cores with a cold cache, for nothing these checks read;
inductor itself is checked by the engine's compile tests)."""

import json

import pytest

from infertop.cli import main


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_quick_bench_e2_e4(tmp_path, capsys) -> None:
    out = tmp_path / "bench"
    assert main(["bench", "--quick", "--experiments", "E2,E4", "--requests", "4",
                 "--repeats", "1", "--bucket-count", "2", "--device", "cpu",
                 "--compile-backend", "eager",
                 "--out", str(out)]) == 0
    report = json.loads((out / "report.json").read_text())
    checks = report["checks"]
    # E2: generate() breaks under compile, the fullgraph loop does not
    assert checks["e2_hf_generate_breaks"] > 0 and checks["e2_fullgraph_breaks"] == 0
    # E4: the planner's buckets bound the compiled shapes and pad less than powers of two
    e4 = report["experiments"]["E4"]
    assert e4["K"] == 2 and e4["configs"]["planner"]["compiled_graphs"] <= 2
    assert checks["e4_planner_waste_pct"] < checks["e4_pow2_waste_pct"]
    assert e4["configs"]["none"]["compiled_graphs"] == 4          # one per distinct length
    assert e4["configs"]["pow2"]["served"] is False               # --quick computes this row
    # every run left a snapshot, and report.md carries both sections
    for run in report["runs"].values():
        assert "error" not in run, run.get("error")
        assert (out / run["snapshot"]).exists()
    text = (out / "report.md").read_text()
    assert "## E2 — Graph breaks" in text and "## E4 — Bucketing" in text
    assert "wrote" in capsys.readouterr().out
