"""SIGTERM and SIGHUP end a headless run as Ctrl-C does, with 128 + the signal."""

from __future__ import annotations

import os
import signal

import pytest

from probe.bench.study_setup import Stop
from probe.checks.interrupts import Interrupted, signal_of, signals_as_interrupt
from probe.engine.process.replay_and_save import GracefulInterrupt, outcome


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
