"""E7's slot sweep (probe/bench/experiments/slot_sweep.py): each slot count's figures from its
own session, checked against computations done here; how busy the device was, one reading at
a time; and one real sweep on t5-tiny, which serves every request at each count."""

from __future__ import annotations

from types import MappingProxyType

import pytest

from probe.bench.slot_sweep import LADDERS, observed, slot_run, sweep, table
from probe.contract.device_sample import DeviceSample
from probe.contract.records import BatchSteps
from probe.contract.session import SessionData
from probe.runs.device_busy import busy_pct
from probe.runs.openloop import OpenLoopStudy
from probe.runs.plan import Plan
from probe.runs.runs import RunContext
from tests.conftest import synthetic_record


def test_busy_is_the_gpus_utilization_or_the_engines_share_of_the_cores():
    gpu = DeviceSample(kind="GPU", name="H200", util_pct=41.0, mem_used_bytes=None,
                       mem_total_bytes=None, mem_free_bytes=None)
    cpu = DeviceSample(kind="CPU", name="2 cores", util_pct=90.0, mem_used_bytes=None,
                       mem_total_bytes=None, mem_free_bytes=None, process_cpu_pct=150.0,
                       cpu_cores=2)
    assert busy_pct(gpu) == 41.0
    assert busy_pct(cpu) == 75.0            # the engine's, not the machine's 90%
    assert busy_pct(DeviceSample(kind="CPU", name="?", util_pct=5.0, mem_used_bytes=None,
                                 mem_total_bytes=None, mem_free_bytes=None)) is None


def session(slots: int, latencies: list[float], out: int) -> SessionData:
    records = tuple(synthetic_record(f"r{i}", i, latency_ms=ms, output_tokens=out,
                                     start_s=0.5 * i)
                    for i, ms in enumerate(latencies))
    steps = BatchSteps(steps=100, slots=slots, captured=(), running=slots - 0.5, rows=slots,
                       host_ms=1.4, period_ms=1.5, on_gpu=True, join_ms=0.3)
    return SessionData(records=records, batch_steps=MappingProxyType({"c1": steps}))


def test_a_runs_figures_come_from_its_session():
    data = session(8, [100.0, 200.0, 300.0, 400.0], out=10)
    run = slot_run(data, 61.5, sized=True)
    assert (run.slots, run.sized, run.requests, run.failed) == (8, True, 4, 0)
    assert run.busy_pct == 61.5 and run.steps == data.batch_steps["c1"]
    # 40 tokens from the first arrival (0 s) to the last end (1.5 s + 0.4 s)
    assert run.tokens_per_s == pytest.approx(40 / 1.9)
    assert run.p95_ms == pytest.approx(385.0)       # linear between 300 and 400 ms
    row = table([run])["rows"][0]
    assert row[0] == "8 (sized)" and row[7] == "1.40 (joins 0.30) / 1.50 ms"


def test_the_observed_line_compares_the_first_and_the_most_slots():
    small = slot_run(session(2, [100.0] * 4, out=5), 20.0, sized=False)
    large = slot_run(session(8, [100.0] * 4, out=20), 80.0, sized=False)
    assert small.tokens_per_s and large.tokens_per_s
    (line, bound) = observed([small, large], "cuda")
    assert f"({large.tokens_per_s / small.tokens_per_s:.2f}×)" in line
    assert "device busy 20% → 80% (NVML GPU utilization)" in line
    assert bound.startswith("at 8 slots: slots 8/8") and bound.endswith("(host-bound)")
    assert observed([small], "cpu") == []


def test_a_sweep_on_t5_tiny_serves_every_request_at_each_count(monkeypatch):
    import probe.bench.slot_sweep as slot_sweep

    monkeypatch.setitem(slot_sweep.LADDERS, "cpu", (1, 3))
    monkeypatch.setattr(slot_sweep, "MIN_REQUESTS", 6)
    monkeypatch.setattr(slot_sweep, "REQUESTS_PER_SLOT", 2)
    context = RunContext(model="t5-tiny", device="cpu", loaded=None, max_input=512, repeats=1,
                         compile_backend="eager")
    plan = Plan(model="t5-tiny", trace="azure-conv", device="cpu", quick=False, requests=(),
                bucket_count=4, planner_edges=(), pow2_edges=(), trace_input_lengths=(),
                trace_output_lengths=())
    study = OpenLoopStudy(context, plan, environment={})
    runs = sweep(study, "cpu")
    assert [run.slots for run in runs] == [1, 3]
    assert all(run.requests == 6 and run.failed == 0 for run in runs)
    assert all(run.tokens_per_s and run.steps is not None for run in runs)
    assert set(study.finished["E7"]) == {"slots/1", "slots/3"}
    assert LADDERS["cuda"][-1] == 0           # a GPU's ladder ends at its sized count


def test_a_reading_that_fails_is_left_out_and_the_run_goes_on(monkeypatch):
    """NVML can fail a reading mid-run: the sampler thread keeps going, quietly."""
    import time

    import torch

    from probe.runs.device_busy import DeviceBusy

    busy = DeviceBusy(torch.device("cpu"), every_s=0.01)
    calls = {"n": 0}
    real = busy._probe.sample

    def flaky():
        calls["n"] += 1
        if calls["n"] % 2 == 0:
            raise RuntimeError("NVML_ERROR_UNKNOWN")
        return real()
    monkeypatch.setattr(busy._probe, "sample", flaky)
    with busy:
        time.sleep(0.2)
    assert calls["n"] >= 4 and busy._thread.is_alive() is False
    assert busy.mean_pct is not None and busy.mean_pct >= 0.0
