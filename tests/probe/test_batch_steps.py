"""Continuous batching's steps, host against GPU: how the loop's bound is read, said by the
panels and the doctor, and kept in the saved session."""

from __future__ import annotations

import json
from dataclasses import replace
from types import MappingProxyType

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from probe.analysis.findings import host_bound
from probe.contract.records import BatchSteps
from probe.contract.session import SessionData
from probe.engine.decode.step_times import WINDOW, StepTimes
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


def test_joins_are_host_work_the_line_and_the_doctor_name():
    """The H200's loop: a graph replay of 0.04 ms host, joins of ~8 ms a step between
    them. Left out, the line said GPU-bound while the GPU was 23% busy."""
    joined = replace(steps(8.3, 9.9, (1, 2, 4, 256)), join_ms=7.9)
    assert joined.bound == "host" and joined.joins_lead
    assert joined.text() == ("slots 143/256 · graphs 1…256 · host 8.30 ms (joins 7.90) of a "
                             "9.90 ms step (host-bound)")
    finding = host_bound(joined)
    assert finding is not None and "most of it is joins" in finding.evidence
    assert "compile=reduce-overhead" not in finding.evidence
    launches = replace(steps(3.9, 4.0), join_ms=0.5)
    assert not launches.joins_lead
    assert "compile=reduce-overhead" in host_bound(launches).evidence


def test_a_session_saved_before_joins_were_counted_still_loads():
    document = json.loads(json.dumps(snapshot_document(
        SessionData(batch_steps=MappingProxyType({"c1": steps(0.4, 1.6)})),
        environment={}, model={}, trace={})))
    del document["batch_steps"]["c1"]["join_ms"]
    assert session_data(document).batch_steps["c1"].join_ms is None


# each step: the joins' host seconds before it, its own host seconds, whether a compile ran
# in it, and the GPU's seconds from the previous step's end to its end
step_runs = st.lists(st.tuples(st.lists(st.floats(0, 0.01), max_size=3), st.floats(0, 0.01),
                               st.booleans(), st.floats(1e-4, 0.02)), min_size=1, max_size=300)


@settings(max_examples=200, deadline=None)
@given(step_runs)
def test_step_times_are_the_windows_means_joins_in_and_compiles_out(run):
    times, done = StepTimes(), 0.0
    for joins, host, compiled, period in run:
        for join in joins:
            times.join(join)
        times.add(host, rows=8, running=4, compiled=compiled)
        done += period
        times.passed(done, compiled=compiled)
    snap = times.snapshot(slots=8, captured=())
    window = run[-WINDOW:]
    kept = [(sum(j), h) for j, h, c, _ in window if not c]
    periods = [p for _, _, c, p in run[1:] if not c][-WINDOW:]
    if kept:
        join_ms = sum(j for j, _ in kept) / len(kept) * 1e3
        assert snap.join_ms == pytest.approx(join_ms)
        assert snap.host_ms == pytest.approx(sum(j + h for j, h in kept) / len(kept) * 1e3)
    else:
        assert snap.host_ms is None and snap.join_ms is None
    if periods:
        assert snap.period_ms == pytest.approx(sum(periods) / len(periods) * 1e3)
    else:
        assert snap.period_ms is None
