"""bench writes its report on every signal, every time (issues #49, #50): SIGTERM at random
moments of a small real bench run (t5-tiny, E5's eager runs, 2 requests, 1 repeat), many
times, each a fresh `python -m infertop bench` forked from one process that imported torch
once (tests/bench/bench_stopper.py). Every stop exits 143; from the moment the output folder
exists (the study began) report.json and report.md are always in it; before, nothing is
written. The moments are drawn afresh each run; a failure names its seed to replay it."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from probe.checks.interrupts import Interrupted

REPO = Path(__file__).resolve().parents[2]
BENCH = ["--quick", "--experiments", "E5", "--requests", "2", "--repeats", "1",
         "--model", "t5-tiny", "--device", "cpu", "--threads", "1"]
AFTER_START, IN_THE_STUDY = 1, 6       # tries: while it starts; once its study has begun


def moments(seed: int) -> list[str]:
    """`m`: one whole run, never signalled, that measures the study's length; `fX`: X s after
    the process started (imports, checks, the model's load); `rX`: at X of the study's
    measured length after its first progress line (a run, between runs, the report being
    written) — a share of what this machine takes now, not seconds a busy one may not reach."""
    draw = random.Random(seed)
    return (["m"] + [f"f{draw.uniform(0.0, 3.0):.2f}" for _ in range(AFTER_START)]
            + [f"r{draw.uniform(0.0, 0.9):.3f}" for _ in range(IN_THE_STUDY)])


@pytest.mark.timeout(1800)
def test_sigterm_at_random_moments_always_ends_143_with_the_report_written(tmp_path):
    seed = int(os.environ.get("INFERTOP_STOP_SEED", random.SystemRandom().randrange(10**6)))
    chosen = moments(seed)
    env = {**os.environ, "PYTHONPATH": str(REPO), "PYTHONUNBUFFERED": "1",
           "XDG_STATE_HOME": str(tmp_path / "state")}
    done = subprocess.run([sys.executable, "-m", "tests.bench.bench_stopper", str(tmp_path),
                           ",".join(chosen), "--", *BENCH], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=1700)
    assert done.returncode == 0, done.stderr[-3000:]
    tries = [json.loads(line) for line in done.stdout.splitlines()]
    assert [t["moment"] for t in tries] == chosen
    replay = f"(replay: INFERTOP_STOP_SEED={seed})"
    signalled = [t for t in tries if t["signalled"]]
    # the machine may speed up after the measured run: most signals still land in a run
    assert len(signalled) >= (len(tries) - 1) // 2, f"most runs ended first {replay}"
    for t in tries:
        said = f"{t['moment']} {replay}: {t['err']}"
        if not t["signalled"]:          # it finished first: a whole report, exit 0
            assert t["status"] == 0 and t["report_json"] and t["report_md"], said
            continue
        assert t["status"] == 143, said
        assert t["report_json"] == t["report_md"] == t["folder"], said
        assert "Traceback" not in t["err"] and "Exception ignored" not in t["err"], said
        if t["folder"]:
            report = json.loads((tmp_path / f"try{tries.index(t)}" / "report.json").read_text())
            assert len(report["runs"]) <= 4, said     # E5's four runs at most, each whole
    # the moments after the study began must have found the folder there
    assert all(t["folder"] for t in signalled if t["moment"].startswith("r")), replay


# -- a signal keeps an open-loop experiment's finished runs ------------------------------------

def test_an_open_loop_experiment_keeps_its_finished_runs_on_a_signal():
    from probe.bench.study import interrupted_open_loop
    results, section = interrupted_open_loop("E7", Interrupted(signal.SIGTERM),
                                             {"chat/1x/off": {"served": 40}})
    assert results["runs"] == {"chat/1x/off": {"served": 40}} and results["interrupted"]
    assert "1 finished run" in section["error"]
