"""tune stopped: the stop line counts finished trials, tune.json is written before the chart
a full disk may fail, and a trial `--resume` reruns is announced when it ends (issue 50)."""

from __future__ import annotations

import argparse
import errno
import json
import signal
import threading
from pathlib import Path

import pytest

from probe.checks.stop_supervisor import Stopped
from probe.contract.objective import parse_slo
from probe.contract.options import OptConfig
from probe.tune import combo_report
from probe.tune.combo import QUICK
from probe.tune.runner import _combo
from probe.tune.salvage import salvage_tune
from probe.tune.space import dimensions
from probe.tune.trials import DONE, INTERRUPTED, Trial
from tests.probe.test_tune_combo import SMALL, fake, search, settings_for_report


def _combo_state(tmp_path: Path, stop_at: int | None = None):
    stop = threading.Event()
    evaluate, _ = fake(stop_at=stop_at, stop=stop)
    state = search(evaluate, trials=4, stop=stop)
    context = dict(search={"mode": QUICK, "objectives": ["goodput"]}, slo_text="latency=1s",
                   settings=settings_for_report())
    return state, context


def test_a_stopped_search_says_its_finished_trials_not_steps(tmp_path, capsys):
    state, context = _combo_state(tmp_path, stop_at=2)
    combo_report.write_combo(tmp_path, state, done=False, **context)
    finished = sum(t.status != INTERRUPTED for t in state.trials)
    assert finished == 1 and state.trials[-1].status == INTERRUPTED
    assert salvage_tune(Stopped(signal.SIGTERM), str(tmp_path)) == 143
    line = capsys.readouterr().err.strip().splitlines()[-1]
    assert line.endswith(f"hold the {finished} finished trial(s)")
    assert "step" not in line


def test_a_full_disk_on_the_chart_leaves_the_finished_trials_done_in_tune_json(tmp_path,
                                                                               monkeypatch):
    state, context = _combo_state(tmp_path)
    assert state.trials and all(t.status == DONE for t in state.trials)

    def full(chart, path):
        raise OSError(errno.ENOSPC, "No space left on device", str(path))
    monkeypatch.setattr(combo_report, "save", full)
    with pytest.raises(OSError):
        combo_report.write_combo(tmp_path, state, done=False, **context)
    saved = json.loads((tmp_path / "tune.json").read_text())
    assert [t["status"] for t in saved["trials"]] == [DONE] * len(state.trials)
    assert saved["frontier_chart"] == {"unavailable": "not written: No space left on device"}
    assert not (tmp_path / "tune_frontier.svg").exists()


def test_a_trial_rerun_by_resume_is_announced_when_it_ends(tmp_path, capsys):
    state, context = _combo_state(tmp_path, stop_at=3)
    cut = state.trials[-1]
    assert cut.status == INTERRUPTED
    previous = [Trial.from_dict(json.loads(json.dumps(t.as_dict()))) for t in state.trials]
    args = argparse.Namespace(search=QUICK, objective=("goodput",), trials=4,
                              find_capacity=False, slo_target=0.9, max_memory=None,
                              max_drift=0.05, amortize=None, max_joules_per_token=None,
                              slo=parse_slo("latency=1s"), budget=30.0)
    evaluate, _ = fake()
    capsys.readouterr()
    _combo(args, OptConfig(), dimensions("cpu", SMALL), previous, evaluate, threading.Event(),
           tmp_path, {"settings": settings_for_report()})
    said = capsys.readouterr().err
    assert f"trial {cut.number} {cut.setup.label()}: {DONE}" in said
    for trial in previous[:-1]:                 # the finished ones were said the first time
        assert f"trial {trial.number} " not in said
