"""The engine's wiring on t5-tiny with a recorded-style counter that rises at each reading:
every served request carries joules split into encode and decode, and the records' joules
plus the idle floor add up to the counter's rise over what the engine served, on the batch-1
path and under continuous batching. Without a counter (this VM) the records say None and the
segment says why."""

from __future__ import annotations

import pytest

from probe.analysis.stats import session_segments
from probe.contract.options import parse_opts
from probe.engine.continuous_scheduler import ContinuousScheduler
from probe.engine.engine import Engine, EngineSettings
from probe.engine.model.requests import EngineRequest
from probe.engine.observe.energy_counter import EnergyReading
from probe.engine.observe.energy_ledger import EnergyLedger
from tests.conftest import varied_tiny_model


class RisingCounter:
    """Each reading 0.25 J above the last (a counter that moves between any two reads)."""
    source = "test counter"

    def __init__(self) -> None:
        self.reads = 0

    def read(self) -> EnergyReading:
        self.reads += 1
        return EnergyReading(0.25 * self.reads, float(self.reads))


@pytest.fixture(scope="module")
def engine():
    settings = EngineSettings(model="t5-tiny", device="cpu", max_new_tokens=16,
                              max_input_tokens=16, compile_backend="eager", max_batch=4)
    built = Engine(settings, parse_opts([]), loaded=varied_tiny_model())
    yield built
    built.close()


class CountingLedger(EnergyLedger):
    """Counts the ledger's per-request updates: how much of its work each request costs."""

    def __init__(self, counter: RisingCounter) -> None:
        super().__init__(counter)
        self.updates = 0

    def charge(self, config_id, start, end, phase, work) -> None:
        self.updates += len(work)
        super().charge(config_id, start, end, phase, work)

    def settle_share(self, request_id: str, mark: float) -> None:
        self.updates += 1
        super().settle_share(request_id, mark)


def with_counter(engine: Engine) -> RisingCounter:
    counter = RisingCounter()
    engine.energy = CountingLedger(counter)
    engine.session = type(engine.session)()
    engine.set_options(engine.options)
    return counter


def total_charged(engine: Engine) -> float:
    data = engine.session.freeze()
    idle = sum(e.idle_j for e in data.energy.values())
    return sum(r.energy_j or 0.0 for r in data.records) + idle


def test_batch_one_requests_split_into_encode_and_decode(engine) -> None:
    counter = with_counter(engine)
    records = [engine.serve([EngineRequest(f"b{i}", i, 5 + i, 3 + i, 0.0)])[0]
               for i in range(3)]
    for record in records:
        assert record.ok and record.energy_phases_j is not None
        # one reading at the start, one at the encoder's end, one at the end: 0.25 J each
        assert record.energy_phases_j.encode == pytest.approx(0.25)
        assert record.energy_phases_j.decode == pytest.approx(0.25)
        assert record.energy_j == pytest.approx(0.5)
    assert total_charged(engine) == pytest.approx(0.25 * (counter.reads - 1))
    (segment,) = session_segments(engine.session.freeze())
    assert segment.energy is not None and segment.energy.source == "test counter"
    tokens = sum(r.output_tokens for r in records)
    assert segment.energy.j_per_token == pytest.approx(1.5 / tokens)


def test_continuous_batching_adds_up_to_the_counter(engine) -> None:
    engine.set_options(parse_opts(["batching=continuous"]))
    counter = with_counter(engine)
    scheduler = ContinuousScheduler(engine)
    waiting = [EngineRequest(f"c{i}", 100 + i, 4 + i, out, 0.0)
               for i, out in enumerate([3, 9, 1, 6, 4, 8])]
    records = scheduler.serve_all(waiting)
    assert len(records) == 6 and all(r.ok for r in records)
    assert all(r.energy_phases_j is not None and r.energy_phases_j.encode > 0
               and r.energy_phases_j.decode > 0 for r in records)
    # a longer request shared more decode steps: it was charged more decode joules
    by_id = {r.id: r for r in records}
    assert by_id["c1"].energy_phases_j.decode > by_id["c2"].energy_phases_j.decode
    assert total_charged(engine) == pytest.approx(0.25 * (counter.reads - 1))
    # the ledger's host work: an encode share and a decode share a request, never one update
    # a running request a step (31 of those here: one a token)
    assert isinstance(engine.energy, CountingLedger)
    assert engine.energy.updates == 2 * len(records) < sum(r.output_tokens for r in records)
    engine.set_options(parse_opts([]))


def test_without_a_counter_records_say_none_and_the_segment_says_why(engine) -> None:
    engine.energy = EnergyLedger(engine.device_probe.energy_counter())
    if engine.energy.available:
        pytest.skip("this machine has an energy counter")
    engine.session = type(engine.session)()
    engine.set_options(engine.options)
    record = engine.serve([EngineRequest("n0", 0, 5, 3, 0.0)])[0]
    assert record.energy_j is None and record.energy_phases_j is None
    (segment,) = session_segments(engine.session.freeze())
    assert segment.energy is not None
    assert segment.energy.text().startswith("energy: not measurable here (")
