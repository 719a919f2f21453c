"""SIGTERM and SIGHUP end a headless run as Ctrl-C does, with 128 + the signal."""

from __future__ import annotations

import gc
import os
import signal
import subprocess
import sys
import threading
import time
import weakref
from pathlib import Path

import pytest

from probe.bench.study_setup import Stop
from probe.checks.interrupts import Interrupted, signal_of, signals_as_interrupt
from probe.engine.process.replay_and_save import GracefulInterrupt, outcome
from probe.tune.runner import _stopped_by_signals


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_the_first_signal_stops_gracefully_and_a_second_stops_now(signum):
    with GracefulInterrupt() as interrupt:
        os.kill(os.getpid(), signum)
        assert interrupt.stop.is_set() and interrupt.signum == signum
        with pytest.raises(Interrupted) as raised:
            os.kill(os.getpid(), signum)
        assert signal_of(raised.value) == signum
    assert signal.getsignal(signal.SIGTERM) is not interrupt._handle    # restored


def test_a_signal_while_saving_only_waits():
    with GracefulInterrupt() as interrupt:
        os.kill(os.getpid(), signal.SIGTERM)
        interrupt.saving = True
        os.kill(os.getpid(), signal.SIGTERM)                # no Interrupted raised
        assert interrupt.signum == signal.SIGTERM


@pytest.mark.parametrize("signum, status", [(signal.SIGINT, 130), (signal.SIGTERM, 143),
                                            (signal.SIGHUP, 129)])
def test_exit_status_is_128_plus_the_signal(signum, status):
    assert outcome((), interrupted=True, signum=signum).exit_status == status
    assert Stop(interrupted=True, signum=signum).exit_status == status
    assert Stop().exit_status == 0


def test_an_unsaved_snapshot_is_a_failure_and_says_which_signal():
    assert outcome((), interrupted=False, saved=False).exit_status == 1
    text = outcome((), interrupted=True, signum=signal.SIGTERM).summary("x.json")
    assert text == "stopped by SIGTERM; wrote x.json: 0 served before the interruption"


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_bench_turns_sigterm_and_sighup_into_its_ctrl_c(signum):
    with signals_as_interrupt(), pytest.raises(KeyboardInterrupt) as raised:
        os.kill(os.getpid(), signum)
    assert signal_of(raised.value) == signum


# -- a stop is never lost inside a callback that swallows exceptions ---------------------------

REPO = Path(__file__).resolve().parents[2]


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
