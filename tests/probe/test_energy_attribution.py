"""The attribution rule (probe/analysis/energy.py): Σ per request + idle = the counter's rise,
for any schedule; a step split by work; the segment's figures against a hand computation;
the engine's ledger agrees with `attribute` on the same readings."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from probe.analysis.energy import Step, attribute, energy_stats, split_step
from probe.contract.figures import ConfigEnergy
from probe.contract.objective import Slo
from probe.contract.records import EnergyPhases, RequestRecord
from probe.engine.observe.energy_counter import EnergyReading, Unavailable
from probe.engine.observe.energy_ledger import EnergyLedger

IDS = ["a", "b", "c", "d"]

work_item = st.tuples(st.sampled_from(IDS), st.integers(min_value=0, max_value=64))
# a schedule: (gap before the step, the step's rise, its phase, its work), in order
schedules = st.lists(st.tuples(st.floats(0, 50), st.floats(0, 500), st.sampled_from(
    ["encode", "decode"]), st.lists(work_item, max_size=5)), max_size=30)


def steps_of(first_j: float, schedule: list) -> tuple[list[Step], float]:
    j, steps = first_j, []
    for gap, rise, phase, work in schedule:
        start = j + gap
        steps.append(Step(start, start + rise, phase, tuple(work)))
        j = start + rise
    return steps, j


@settings(max_examples=300, deadline=None)
@given(schedules, st.floats(0, 1e6), st.floats(0, 50))
def test_per_request_plus_idle_is_the_counter_rise(schedule, first_j, tail) -> None:
    steps, last_j = steps_of(first_j, schedule)
    last_j += tail
    result = attribute(first_j, last_j, steps)
    owned = sum(p.encode + p.decode for p in result.per_request.values())
    # within float summation's error at these magnitudes, far below any counter's 1 mJ
    assert owned + result.idle_j == pytest.approx(last_j - first_j, abs=1e-6)
    assert result.idle_j >= -1e-6
    gaps = sum(g for g, *_ in schedule) + tail
    unowned = sum(s.end_j - s.start_j for s in steps if sum(u for _, u in s.work) == 0)
    assert result.idle_j == pytest.approx(gaps + unowned, abs=1e-6)


@settings(max_examples=200, deadline=None)
@given(schedules, st.floats(0, 1e3))
def test_the_ledger_charges_what_attribute_computes(schedule, first_j) -> None:
    steps, last_j = steps_of(first_j, schedule)
    readings = [first_j] + [j for s in steps for j in (s.start_j, s.end_j)]

    class Recorded:
        source = "recorded"

        def __init__(self) -> None:
            self.i = -1

        def read(self) -> EnergyReading:
            self.i += 1
            return EnergyReading(readings[self.i], float(self.i))

    ledger = EnergyLedger(Recorded())
    ledger.begin("c1")                      # the run's first reading
    for step in steps:
        start = ledger.begin("c1")
        ledger.end("c1", start, step.phase, step.work)
    expected = attribute(first_j, last_j, steps)
    for rid in IDS:
        phases = ledger.take(rid)
        want = expected.per_request.get(rid, EnergyPhases(0.0, 0.0))
        assert phases is not None
        assert phases.encode == pytest.approx(want.encode, abs=1e-6)
        assert phases.decode == pytest.approx(want.decode, abs=1e-6)
    assert ledger.config_energy("c1").idle_j == pytest.approx(expected.idle_j, abs=1e-6)


# continuous batching: each step, requests may join before it and leave after it
batch_schedules = st.lists(st.tuples(st.floats(0, 50), st.floats(0, 500),
                                     st.sets(st.sampled_from(IDS)), st.sets(st.sampled_from(IDS))),
                           max_size=40)


@settings(max_examples=300, deadline=None)
@given(batch_schedules, st.floats(0, 1e6))
def test_shared_steps_charge_what_attribute_computes(schedule, first_j) -> None:
    """The running sum of joules a share (end_shared/share_mark/settle_share) against each
    step split one token a request by `attribute`, the independent computation."""
    readings, steps, marks = [first_j], [], {}
    j = first_j

    class Recorded:
        source = "recorded"
        i = -1

        def read(self) -> EnergyReading:
            self.i += 1
            return EnergyReading(readings[self.i], float(self.i))

    ledger = EnergyLedger(Recorded())
    ledger.begin("c1")
    running: list[str] = []
    for gap, rise, joining, leaving in schedule:
        for rid in sorted(joining - set(running)):
            running.append(rid)
            marks[rid] = ledger.share_mark()
        j += gap
        readings.append(j)
        start = ledger.begin("c1")
        j += rise
        readings.append(j)
        ledger.end_shared("c1", start, len(running))
        steps.append(Step(j - rise, j, "decode", tuple((rid, 1) for rid in running)))
        for rid in sorted(leaving & set(running)):
            running.remove(rid)
            ledger.settle_share(rid, marks.pop(rid))
    for rid in running:
        ledger.settle_share(rid, marks.pop(rid))
    expected = attribute(first_j, j, steps)
    for rid in IDS:
        phases = ledger.take(rid)
        want = expected.per_request.get(rid, EnergyPhases(0.0, 0.0))
        assert phases is not None and phases.encode == 0.0
        # a running sum at 1e6 J: its differences are exact to float rounding there
        assert phases.decode == pytest.approx(want.decode, rel=1e-9, abs=1e-6)
    assert ledger.config_energy("c1").idle_j == pytest.approx(expected.idle_j, abs=1e-6)


def test_a_step_is_split_by_work_and_an_empty_step_is_nobodys() -> None:
    assert split_step(12.0, [("a", 1), ("b", 3), ("a", 2)]) == {"a": 6.0, "b": 6.0}
    assert split_step(5.0, [("a", 0)]) == {}


def test_no_counter_means_no_number() -> None:
    ledger = EnergyLedger(Unavailable("no powercap here"))
    assert ledger.begin("c1") is None and ledger.take("a") is None
    assert ledger.config_energy("c1").unavailable == "no powercap here"


def record(rid: str, *, out: int, encode: float, decode: float, padded: int = 10,
           real: int = 10, error: str | None = None, ttft: float = 100.0) -> RequestRecord:
    return RequestRecord(
        id=rid, seq=0, config_id="c1", input_tokens=real, padded_tokens=padded,
        output_tokens=out, arrival_s=0.0, start_s=0.0, first_token_s=0.1, end_s=1.0,
        queue_ms=0.0, compile_stall_ms=0.0, encoder_ms=1.0, decoder_ms=1.0, ttft_ms=ttft,
        tpot_ms=None, latency_ms=1000.0, kv_cache_bytes=0, kv_cache_used_bytes=0,
        kv_self_attention_bytes=0, kv_cross_attention_bytes=0, error=error,
        energy_j=encode + decode, energy_phases_j=EnergyPhases(encode, decode))


def test_segment_figures_against_a_hand_computation() -> None:
    records = [record("a", out=10, encode=2.0, decode=8.0, padded=16, real=4),
               record("b", out=30, encode=4.0, decode=16.0, ttft=900.0),
               replace(record("c", out=0, encode=5.0, decode=0.0, error="boom"))]
    config = ConfigEnergy(source="RAPL package-0", idle_j=15.0, idle_s=5.0, busy_s=10.0)
    stats = energy_stats(records, config, Slo(ttft_ms=500.0))
    assert stats.joules == 35.0 + 15.0
    assert stats.idle_joules == 15.0
    assert stats.j_per_token == 35.0 / 40           # failed c's joules count, its tokens don't
    assert stats.j_per_good_token == 35.0 / 10      # b missed the TTFT bound
    assert stats.avg_power_w == 50.0 / 15.0
    assert stats.idle_power_w == 3.0
    assert stats.padding_share == pytest.approx(2.0 * 12 / 16 / 35.0)
    assert stats.failed_share == 5.0 / 35.0
    assert set(stats.as_dict()) >= {"source", "joules", "idle_joules", "j_per_token",
                                     "j_per_good_token", "avg_power_w", "padding_share",
                                     "failed_share"}


def test_unavailable_segment_says_why() -> None:
    stats = energy_stats([], ConfigEnergy(unavailable="no powercap here"), None)
    assert stats.as_dict() == {"unavailable": "no powercap here"}
    assert stats.short_text() == "not measurable here (no powercap here)"
    assert energy_stats([], None, None).text() == "energy: no energy readings in this session"
