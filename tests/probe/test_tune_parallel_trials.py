"""`tune --search quick|exhaustive` with several trials in flight (what `--ray` gives it): a fake
pool of workers that finishes its trials out of order. Each trial is measured against the
best known when it started, each result is merged as it arrives, no config runs twice, a stop
leaves what was in flight to `--resume`. No engine, no Ray."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field, replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from probe.contract.options import OptConfig
from probe.runs.spread import Spread
from probe.tune.combo import EXHAUSTIVE, QUICK, run_combo
from probe.tune.search import Measured
from probe.tune.space import dimensions, every_config
from probe.tune.trial_pool import Outcome
from probe.tune.trials import DONE, INTERRUPTED, Bounds
from probe.tune.tuned_settings import Setup

KEYS = ("compile", "bucketing", "batching", "max_batch")


def goodput(setup: Setup) -> float:
    value = 1.0
    if setup.options.compiled and setup.options.bucketing == "on":
        value *= 2.0
    elif setup.options.compiled:
        value *= 0.7
    if setup.options.batching == "continuous":
        value *= 1 + (setup.settings.max_batch or 0) / 32
    return value


def side(setup: Setup, machine: float) -> Measured:
    value = goodput(setup) * machine
    return Measured(Spread.of([value * 0.99, value * 1.01]), value, 1.0, 100 / value, None)


@dataclass
class ShuffledPool:
    """`width` trials in flight; each wait ends one of them, chosen by `pick` (out of start
    order). Each trial's two sides share one machine speed, which differs trial to trial (as
    nodes do): the ratio cancels it."""
    width: int
    pick: list[int]
    stop_after: int | None = None
    stop: threading.Event | None = None
    started: list[tuple[int, Setup, Setup | None]] = field(default_factory=list)
    in_flight: list[tuple[int, Setup, Setup | None]] = field(default_factory=list)
    ended: int = 0
    most_at_once: int = 0
    merged: list[int] = field(default_factory=list)          # tickets, as they ended
    merged_at_start: dict[int, list[int]] = field(default_factory=dict)

    def start(self, ticket: int, setup: Setup, label: str, control: Setup | None) -> None:
        self.started.append((ticket, setup, control))
        self.merged_at_start[ticket] = list(self.merged)
        self.in_flight.append((ticket, setup, control))
        self.most_at_once = max(self.most_at_once, len(self.in_flight))

    def finished(self) -> list[tuple[int, Outcome]]:
        if self.stop_after is not None and self.ended >= self.stop_after and self.stop:
            self.stop.set()
            self.in_flight.clear()
            return []
        at = self.pick[self.ended % len(self.pick)] % len(self.in_flight)
        ticket, setup, control = self.in_flight.pop(at)
        self.ended += 1
        self.merged.append(ticket)
        machine = 0.5 + (ticket % 5) / 4
        result = side(setup, machine)
        if control is not None:
            result = replace(result, control=side(control, machine))
        return [(ticket, result)]


def search(pool, *, mode=QUICK, trials=10, previous=(), stop=None):
    return run_combo(OptConfig(), None, mode=mode, dims=dimensions("cpu", KEYS), trials=trials,
                     objectives=("goodput",), bounds=Bounds(), seeds=lambda *given: [],
                     previous=previous, stop=stop, pool=pool)


@settings(max_examples=25, deadline=None)
@given(st.integers(2, 4), st.lists(st.integers(0, 3), min_size=1, max_size=6),
       st.sampled_from([QUICK, EXHAUSTIVE]))
def test_trials_in_flight_merge_as_they_end_each_against_the_best_known_at_its_start(
        width, pick, mode):
    pool = ShuffledPool(width, pick)
    state = search(pool, mode=mode)
    setups = [s for _, s, _ in pool.started]
    assert len(setups) == len(set(setups))               # never a config twice
    assert pool.most_at_once == min(width, len(setups) - 1)   # the default ran alone
    done = [t for t in state.trials if t.status == DONE]
    assert len(done) == len(state.trials)                # every one merged
    if mode == QUICK:
        assert len(state.trials) == 1 + 10
    else:
        assert len(state.trials) == len(set(every_config(OptConfig(),
                                                         dimensions("cpu", KEYS))))
    default = goodput(state.default)
    for trial in state.trials[1:]:
        # carried through its control's own ratio on another machine speed: the true ratio
        assert trial.vs_default["goodput"].value == pytest.approx(goodput(trial.setup) / default)
        assert trial.control_setup is not None


def test_each_control_is_the_best_merged_before_the_trial_started():
    pool = ShuffledPool(3, [2, 0, 1])
    state = search(pool, trials=9)
    for ticket, _, control in pool.started[1:]:
        trial = next(t for t in state.trials if t.number == ticket)
        assert trial.control_setup == control
        # the best of the trials merged when it started (not of those still in flight)
        known = [t for t in state.trials if t.number in pool.merged_at_start[ticket]]
        assert control == max(known, key=lambda t: (goodput(t.setup), -t.number)).setup


def test_a_stop_leaves_the_trials_in_flight_interrupted_and_resume_runs_only_them():
    stop = threading.Event()
    pool = ShuffledPool(3, [1], stop_after=4, stop=stop)
    state = search(pool, trials=8, stop=stop)
    assert state.stopped == "interrupted"
    cut = [t for t in state.trials if t.status == INTERRUPTED]
    assert len(cut) == 3                                 # the width, all in flight
    again = ShuffledPool(3, [0])
    resumed = search(again, trials=8, previous=state.trials)
    started = [s for _, s, _ in again.started]
    assert set(t.setup for t in cut) <= set(started)
    finished_before = {t.setup for t in state.trials if t.status == DONE}
    assert not finished_before & set(started)
    assert all(t.status == DONE for t in resumed.trials) and len(resumed.trials) == 9
