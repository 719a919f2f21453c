"""Continuous batching's steps, host against GPU: how the loop's bound is read, said by the
panels and the doctor, and kept in the saved session."""

from __future__ import annotations

import json
from types import MappingProxyType

import pytest

from probe.analysis.findings import host_bound
from probe.contract.records import BatchSteps
from probe.contract.session import SessionData
from probe.engine.decode.step_times import StepTimes
from probe.session_store.snapshot import session_data, snapshot_document


def steps(host_ms: float, period_ms: float, captured=()) -> BatchSteps:
    return BatchSteps(steps=400, slots=256, captured=captured, running=143.0, rows=160.0,
                      host_ms=host_ms, period_ms=period_ms)


@pytest.mark.parametrize(("host", "period", "bound"), [(3.9, 4.0, "host"), (0.4, 1.6, "GPU"),
                                                        (1.0, 1.6, "both")])
def test_the_bound_is_read_from_the_hosts_share_of_a_step(host, period, bound):
    assert steps(host, period).bound == bound


def test_the_line_names_slots_graphs_and_both_times():
    text = steps(0.4, 1.6, (1, 2, 4, 256)).text()
    assert text == "slots 143/256 · graphs 1…256 · host 0.40 ms of a 1.60 ms step (GPU-bound)"
    assert "no CUDA graphs" in steps(3.9, 4.0).text()
    assert steps(3.9, 4.0).short_text() == "slots 143/256 · host 3.90/4.00 ms · host-bound"


def test_on_a_cpu_there_is_no_bound_to_read_only_the_step():
    cpu = BatchSteps(steps=9, slots=8, captured=(), running=5.0, rows=8.0, host_ms=0.88,
                     period_ms=0.92, on_gpu=False)
    assert cpu.bound is None and host_bound(cpu) is None
    assert cpu.short_text() == "slots 5/8 · 0.92 ms a step"
    assert "host-bound" not in cpu.text()


def test_the_doctor_names_a_host_bound_loop_with_its_evidence_and_fix():
    finding = host_bound(steps(3.9, 4.0))
    assert finding is not None and finding.finding == "host_bound"
    assert "host 3.90 ms of a 4.00 ms step" in finding.evidence
    assert "compile=reduce-overhead" in finding.evidence
    assert host_bound(steps(0.4, 1.6)) is None
    assert host_bound(None) is None


def test_the_steps_survive_a_save_and_a_load():
    data = SessionData(batch_steps=MappingProxyType({"c1": steps(0.4, 1.6, (1, 2, 4))}))
    document = json.loads(json.dumps(snapshot_document(data, environment={}, model={},
                                                       trace={})))
    assert session_data(document).batch_steps["c1"] == steps(0.4, 1.6, (1, 2, 4))


def test_step_times_average_host_work_and_the_gpus_period():
    times = StepTimes()
    for i in range(5):
        times.add(0.001, rows=8, running=6)
        times.passed(10.0 + 0.004 * i)
    snap = times.snapshot(slots=8, captured=(1, 2, 4, 8))
    assert snap.steps == 5 and snap.host_ms == pytest.approx(1.0)
    assert snap.period_ms == pytest.approx(4.0) and snap.bound == "GPU"
    times.idle()                     # a gap with nothing running is no step's period
    times.passed(99.0)
    assert times.snapshot(8, ()).period_ms == pytest.approx(4.0)
