"""The observer's alternating passes stop once their paired verdict is settled, on a fake engine
whose probe costs a chosen share of every request: no model, no torch.compile."""

from __future__ import annotations

import itertools
import random
from types import SimpleNamespace

import pytest

from probe.bench.experiments.observer import expected_passes, measure_observer, observer_pairs
from probe.contract.options import OptConfig
from probe.runs.plan import BenchRequest, RunSpec
from probe.runs.runs import RunContext, RunHooks
from probe.runs.stopping import FIXED, SEQUENTIAL
from tests.conftest import synthetic_record

COUNT = 30


class FakeProbe:
    def __init__(self) -> None:
        self.installed = True
        self._events: list = []

    def uninstall(self) -> None:
        self.installed = False

    def install(self) -> None:
        self.installed = True

    def graph_breaks(self) -> list:
        return []

    def collect(self) -> list:
        return []

    def set_context(self, request_id, config_id) -> None:
        pass


class FakeEngine:
    """Serves each request in its size's milliseconds, `cost` more while the real probe is in
    place, with 2% noise."""

    def __init__(self, cost: float, seed: int = 0) -> None:
        self.probe = self.real = FakeProbe()
        self.cost = cost
        self.rng = random.Random(seed)
        self.now = 0.0
        self.clock = SimpleNamespace(now_s=lambda: self.now)
        self.seq = itertools.count()

    def serve(self, requests):
        out = []
        for request in requests:
            probed = self.probe is self.real and self.real.installed
            latency = (10.0 * request.input_length * (1 + self.cost * probed)
                       * (1 + self.rng.gauss(0, 0.02)))
            out.append(synthetic_record(request.id, next(self.seq), latency_ms=latency,
                                        input_tokens=request.input_length, start_s=self.now))
            self.now += latency / 1000
        return out


def _spec() -> RunSpec:
    return RunSpec(OptConfig(), tuple(BenchRequest(f"r{i}", 5 + i, 5) for i in range(COUNT)),
                   "replayed")


def _context(stopping: str) -> RunContext:
    return RunContext(model="t5-tiny", device="cpu", loaded=None, max_input=512, repeats=3,
                      stopping=stopping)


def test_a_probe_that_costs_nothing_settles_within_noise_after_one_pair() -> None:
    figures = measure_observer(FakeEngine(cost=0.0), _spec(), _context(SEQUENTIAL), RunHooks())
    assert figures.order == ("on", "off")
    assert figures.verdict == "within noise" and "paired over 30 requests" in figures.comparison
    assert figures.cap_passes == 2 * observer_pairs(3) == 6


def test_a_probe_near_the_margin_serves_on_and_fixed_serves_every_pair() -> None:
    near = measure_observer(FakeEngine(cost=0.10), _spec(), _context(SEQUENTIAL), RunHooks())
    assert len(near.order) > 2 and near.order[:4] == ("on", "off", "off", "on")
    fixed = measure_observer(FakeEngine(cost=0.0), _spec(), _context(FIXED), RunHooks())
    assert fixed.order == ("on", "off", "off", "on", "on", "off")
    assert fixed.verdict == "within noise"


def test_a_costly_probe_is_called_slower() -> None:
    figures = measure_observer(FakeEngine(cost=0.5), _spec(), _context(SEQUENTIAL), RunHooks())
    assert figures.order == ("on", "off") and figures.verdict == "slower"
    assert figures.overhead_fraction == pytest.approx(1 - 1 / 1.5, abs=0.03)


def test_the_estimate_expects_one_pair_when_sequential() -> None:
    assert expected_passes(_context(SEQUENTIAL)) == 2
    assert expected_passes(_context(FIXED)) == 6
