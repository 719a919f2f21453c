"""Stops, outputs and noise, round four (issue #50): a stop raised inside a callback that
swallows it is delivered again, never lost; tune's stop line counts trials; tune.json is
written before the chart a full disk may fail; a trial rerun by --resume is announced; the
project's own log records (a chart's "Glyph 27 missing from font") never reach stderr; and
doctor --verify's progress names the SLO a session has."""

from __future__ import annotations

import argparse
import errno
import gc
import json
import os
import signal
import subprocess
import sys
import threading
import time
import weakref
from pathlib import Path

import pytest

from probe.checks.interrupts import Interrupted, signals_as_interrupt
from probe.checks.stop_supervisor import Stopped
from probe.contract.objective import parse_slo
from probe.contract.options import OptConfig
from probe.engine.process.replay_and_save import GracefulInterrupt
from probe.engine.process.third_party_output import third_party_output_to
from probe.tune import combo_report
from probe.tune.combo import QUICK
from probe.tune.runner import _combo, _stopped_by_signals
from probe.tune.salvage import salvage_tune
from probe.tune.space import dimensions
from probe.tune.trials import DONE, INTERRUPTED, Trial
from tests.probe.test_tune_combo import SMALL, fake, search, settings_for_report

REPO = Path(__file__).resolve().parents[2]


# -- a stop is never lost inside a callback that swallows exceptions -------------------------------

class _Referent:
    pass


def _signal_inside_a_weakref_callback(signum: int) -> None:
    """The signal arrives while Python runs a weakref callback (as torch/_dynamo/utils.py's
    do, mid-compile): what the handler raises there is 'ignored' by Python."""
    referent = _Referent()

    def callback(ref) -> None:
        os.kill(os.getpid(), signum)
        for _ in range(100):        # the handler runs here, inside the callback
            pass

    ref = weakref.ref(referent, callback)   # noqa: F841 - kept alive until the referent dies
    del referent
    gc.collect()
    deadline = time.monotonic() + 30        # the run goes on, as a compile would
    while time.monotonic() < deadline:
        time.sleep(0.001)
    raise AssertionError("the stop was lost")


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_bench_and_replays_load_never_lose_a_stop_raised_inside_a_callback(signum, capfd):
    with signals_as_interrupt(), pytest.raises(Interrupted) as raised:
        _signal_inside_a_weakref_callback(signum)
    assert raised.value.signum == signum
    assert "Exception ignored" not in capfd.readouterr().err


def test_replays_second_signal_is_never_lost_inside_a_callback(capfd):
    with GracefulInterrupt() as interrupt:
        os.kill(os.getpid(), signal.SIGHUP)             # the first only flags
        assert interrupt.stop.is_set()
        with pytest.raises(Interrupted) as raised:
            _signal_inside_a_weakref_callback(signal.SIGHUP)
    assert raised.value.signum == signal.SIGHUP
    assert "Exception ignored" not in capfd.readouterr().err


def test_tunes_second_signal_is_never_lost_inside_a_callback(capfd):
    stop, received = threading.Event(), []
    with _stopped_by_signals(stop, received, "the finished trials"):
        os.kill(os.getpid(), signal.SIGTERM)
        assert stop.is_set()
        with pytest.raises(KeyboardInterrupt):
            _signal_inside_a_weakref_callback(signal.SIGTERM)
    err = capfd.readouterr().err
    assert "keeping the finished trials" in err and "Exception ignored" not in err
    assert received[0] == signal.SIGTERM


def test_any_other_unraisable_exception_goes_to_the_hook_as_before(monkeypatch):
    seen: list[BaseException] = []
    monkeypatch.setattr(sys, "unraisablehook", lambda unraisable: seen.append(
        unraisable.exc_value))

    class Loud:
        def __del__(self):
            raise ValueError("not a stop")
    with signals_as_interrupt():
        Loud()
        gc.collect()
    assert [str(e) for e in seen] == ["not a stop"]
    assert sys.unraisablehook is not None and not isinstance(seen[0], KeyboardInterrupt)


def test_a_delivery_pending_when_the_run_ends_is_dropped():
    """A stop swallowed just before the run left `interrupts_never_lost` must not reach
    whatever the process does next (a late Ctrl-C once landed in a gc callback)."""
    from types import SimpleNamespace
    with signals_as_interrupt():
        sys.unraisablehook(SimpleNamespace(exc_value=KeyboardInterrupt(), exc_type=None,
                                           exc_traceback=None, err_msg=None, object=None))
    time.sleep(0.2)          # a delivery would raise KeyboardInterrupt in here


# -- tune: trials, and the summary before the chart ------------------------------------------------

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


# -- noise: infertop's own log records are for the log ---------------------------------------------

def test_a_charts_glyph_warning_never_reaches_stderr_outside_any_log():
    """No handler configured (a plain command): logging's last resort would print it."""
    script = ("import warnings\n"
              "from probe.report_charts.canvas import warnings_to_log\n"
              "with warnings_to_log('chart x'):\n"
              "    warnings.warn('Glyph 27 (\\x1b) missing from font(s) DejaVu Sans.')\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=120)
    assert done.returncode == 0 and done.stderr == ""


def test_in_a_headless_command_the_projects_records_go_to_the_engine_log(tmp_path, capfd):
    import logging
    log = tmp_path / "engine.log"
    with third_party_output_to(str(log)):
        logging.getLogger("probe.report_charts.canvas").warning("chart x: Glyph 27 missing")
    assert "Glyph 27" not in capfd.readouterr().err
    assert "chart x: Glyph 27 missing" in log.read_text()


# -- progress says what is true -------------------------------------------------------------------

def test_verify_progress_never_says_no_slo_for_a_session_with_one():
    from probe.tune.evaluate import _rate_measured, _Side
    said: list[str] = []
    _rate_measured(_Side(OptConfig(), "B"), said.append, slo=True)
    _rate_measured(_Side(OptConfig(), "A"), said.append, slo=False)
    assert "no SLO" not in said[0] and "no goodput" in said[0]
    assert said[1].endswith("no SLO, so no goodput")


# -- Ctrl-C on a replay: the session records it ---------------------------------------------------

class _Clock:
    def now_s(self) -> float:
        return 100.0


class _Engine:
    """What serve_and_save reads of an engine: its session and clock."""
    def __init__(self) -> None:
        from probe.contract.session import Session
        self.session = Session()
        self.clock = _Clock()


class _Loop:
    """Serves `served` requests, then the user presses Ctrl-C; ends at the stop, as the
    serving loop does."""
    def __init__(self, engine: _Engine, served: int, signum: int) -> None:
        self.engine, self.served, self.signum = engine, served, signum

    def run(self, stop: threading.Event) -> None:
        from tests.conftest import synthetic_record
        config = self.engine.session.config_id(OptConfig())
        for i in range(self.served):
            self.engine.session.add_record(synthetic_record(f"r{i}", i, latency_ms=50.0,
                                                                config_id=config))
        os.kill(os.getpid(), self.signum)
        assert stop.is_set()


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_an_interrupted_replay_is_recorded_in_its_session(tmp_path, capsys, signum):
    from infertop.commands.doctor import diagnosis_of
    from probe.engine.process.replay_and_save import serve_and_save
    from probe.session_store.snapshot import read_document, saved_session, snapshot_document
    from probe.session_store.snapshot_report import show

    engine, out = _Engine(), tmp_path / "run.json"
    document = lambda: snapshot_document(  # noqa: E731
        engine.session.freeze(), environment={"device": "cpu"},
        model={"name": "t5-tiny"}, trace={"name": "chat", "requests": 400, "asked": 40})
    result = serve_and_save(engine, _Loop(engine, 8, signum), out, document, asked=40)
    assert result.exit_status == 128 + signum
    data = saved_session(read_document(out))
    (notice,) = data.notices
    assert notice.level == "warning" and "8 of 40 asked" in notice.text
    assert "interrupted by" in notice.text
    assert notice.text in show(str(out))                         # snapshot show says it
    _, report = diagnosis_of(str(out))
    traffic = report.checklist[0]
    assert traffic.evidence.startswith("8 of 40 requests served")  # of asked, not of 20


# -- gpu-check stops the same way (planted: no GPU here) ------------------------------------------

GPU_STUBBORN = """
import json, signal, sys, tempfile, time
from pathlib import Path
import tools.gpu_check.check as check

def stubborn(args):
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "gpu-check.json").write_text(json.dumps({"nvml": {"idle": "ok"}}))   # a section
    tempfile.mkdtemp(prefix="gpu-decode-")          # as the decode matrix makes its own
    print("planted: a section that cannot be cut short", file=sys.stderr, flush=True)
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM, signal.SIGHUP})
    while True:                 # a compile in C: no Python handler runs until it returns
        time.sleep(0.05)

check._check = stubborn
sys.argv = ["check", "--out", sys.argv[1]]
sys.exit(check.main())
"""


@pytest.mark.timeout(300)
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_gpu_check_stops_with_128_plus_the_signal_keeping_its_sections(tmp_path, signum):
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    out = tmp_path / "gpu-out"
    env = {**os.environ, "PYTHONPATH": str(REPO), "PYTHONUNBUFFERED": "1",
           "TMPDIR": str(temporary)}
    child = subprocess.Popen([sys.executable, "-c", GPU_STUBBORN, str(out)], env=env, text=True,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert child.stderr is not None
    for line in child.stderr:
        if "planted" in line:
            break
    child.send_signal(signum)
    _, err = child.communicate(timeout=120)
    assert child.returncode == 128 + signum, err
    report = json.loads((out / "gpu-check.json").read_text())
    assert report["nvml"] == {"idle": "ok"}
    assert report["stopped"] == f"interrupted by {signal.Signals(signum).name}"
    assert "holds the sections that finished" in err
    assert list(temporary.iterdir()) == []          # no scratch, no gpu-decode-* left


# -- python -m infertop: from its first moment ----------------------------------------------------

@pytest.mark.parametrize("after_s", [0.2, 0.8])
def test_a_sigterm_while_infertop_imports_ends_it_with_143(after_s):
    """While its modules import (about 2 s on a busy machine) and before a command runs."""
    child = subprocess.Popen([sys.executable, "-m", "infertop", "trace", "stats", "chat"],
                             env={**os.environ, "PYTHONPATH": str(REPO)}, text=True,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    time.sleep(after_s)
    child.send_signal(signal.SIGTERM)
    _, err = child.communicate(timeout=120)
    assert child.returncode in (0, 143), err        # finished first, or stopped: never -15
    if child.returncode == 143:
        assert err.strip().splitlines()[-1] == "infertop: stopped by SIGTERM"


def test_the_dashboard_keeps_the_default_stop_signals():
    from probe.checks.interrupts import default_stop_signals
    with signals_as_interrupt():
        with default_stop_signals():
            assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL
            assert signal.getsignal(signal.SIGHUP) == signal.SIG_DFL
        assert signal.getsignal(signal.SIGTERM) != signal.SIG_DFL
