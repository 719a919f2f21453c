"""Compile break-even and the live roofline: each recomputed another way."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from probe.analysis.break_even_live import break_even_status
from probe.analysis.stats import break_even
from probe.engine.measure.bandwidth_cache import MachineBandwidth, machine_bandwidth
from probe.engine.measure.step_roofline import decode_step_bytes
from tests.conftest import synthetic_record as record


def records(ms_per_token: float, n: int, config_id: str, stall_ms: float = 0.0):
    out = []
    for i in range(n):
        tokens = 4 + i % 3
        r = record(f"{config_id}{i}", i, latency_ms=ms_per_token * tokens + stall_ms,
                   output_tokens=tokens, config_id=config_id, stall_ms=stall_ms if i == 0 else 0)
        out.append(replace(r, end_s=r.start_s + (ms_per_token * tokens + r.compile_stall_ms) / 1e3))
    return out


def test_break_even_is_compile_time_over_the_saving_per_request():
    compiled, eager = records(5.0, 6, "c2", stall_ms=30_000.0), records(15.0, 6, "c1")
    result = break_even(30.0, compiled, eager)
    mean_tokens = sum(r.output_tokens for r in compiled) / len(compiled)
    assert result.saved_ms_per_request == pytest.approx(10.0 * mean_tokens)
    assert result.requests == pytest.approx(30_000.0 / (10.0 * mean_tokens))


def test_break_even_says_never_when_compiled_is_slower_and_waits_for_data():
    assert break_even(5.0, records(20.0, 6, "c2"), records(15.0, 6, "c1")).requests == math.inf
    assert break_even(5.0, records(5.0, 4, "c2"), records(15.0, 6, "c1")) is None


def test_the_live_break_even_pairs_a_compiled_config_with_its_eager_twin(make_engine):
    from tests.conftest import serve
    engine = make_engine("decode=fullgraph")
    serve(engine, [(7, 4)] * 5)
    engine.set_options(engine.options.with_option("compile", "default"))
    serve(engine, [(7, 4)] * 5, start_seq=5)
    data = engine.session.freeze()
    status = break_even_status(data, engine.options, engine.config_id)
    compile_s = sum(e.duration_s for e in data.events if e.config_id == "c2")
    assert (status.compiled_config, status.eager_config) == ("c2", "c1")
    assert status.compile_s == pytest.approx(compile_s) and compile_s > 0


def test_the_engine_roofline_is_its_step_bytes_over_the_bandwidth(make_engine):
    engine = make_engine("decode=fullgraph", "precision=bf16")
    assert engine.roofline_status() is None                  # nothing measured yet
    engine.bandwidth = MachineBandwidth("here", 20.0, 1.0, engine.fp32_step_bytes())
    status = engine.roofline_status()
    step = decode_step_bytes(engine.switchboard.model_for(engine.options)).total
    assert status.step_bytes == step and status.precision == "bf16"
    assert status.roofline_ms == pytest.approx(step / 20e9 * 1e3)
    assert status.ratio(2 * status.roofline_ms) == pytest.approx(2.0)
    assert engine.fp32_step_bytes() == pytest.approx(2 * step, rel=0.01)   # bf16: half


def test_bandwidth_is_measured_once_per_machine_and_working_set_and_cached(tmp_path,
                                                                           monkeypatch):
    import probe.engine.measure.step_roofline
    calls = []

    def measuring(gb_s):
        return lambda device, nbytes: calls.append((device, nbytes)) or type("B", (), {
            "read_gb_s": gb_s})()

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(probe.engine.measure.step_roofline, "working_set_bandwidth", measuring(31.8))
    first = machine_bandwidth("cpu", 150 * 2**20, now=1000.0)
    again = machine_bandwidth("cpu", 150 * 2**20, now=2000.0)
    assert calls == [("cpu", 150 * 2**20)] and again == first and first.read_gb_s == 31.8
    assert first.working_set_bytes == 150 * 2**20
    machine_bandwidth("cpu", 600 * 2**20, now=2000.0)        # another model: its own entry
    assert calls[-1] == ("cpu", 600 * 2**20)
    monkeypatch.setattr(probe.engine.measure.step_roofline, "working_set_bandwidth", measuring(12.0))
    next_day = machine_bandwidth("cpu", 150 * 2**20, now=1000.0 + 25 * 3600)  # best kept
    assert len(calls) == 3 and next_day.read_gb_s == 31.8
    later = machine_bandwidth("cpu", 150 * 2**20, now=1000.0 + 25 * 3600 + 31 * 24 * 3600)
    assert len(calls) == 4 and later.read_gb_s == 12.0      # a month on: forgotten


def test_the_working_set_bandwidth_reads_a_buffer_of_the_step_s_bytes():
    from probe.engine.measure.step_roofline import working_set_bandwidth
    measured = working_set_bandwidth("cpu", 6 * 2**20, repeats=2)
    assert measured.buffer_bytes == pytest.approx(6 * 2**20, rel=0.01)
    assert measured.read_gb_s > 0.1
