"""Each figure has one definition, the same in every decode path, and can be recomputed from
the records a session saves: KV positions, TPOT from a request's own tokens, engine CPU %."""

from __future__ import annotations

import time

import pytest
import torch

from probe.engine.decode.kv_cache import used_bytes_formula
from probe.engine.observe.device_probe import DeviceProbe
from tests.conftest import request, serve
from tests.probe.test_batching import replay_all

PATHS = [("decode=fullgraph",), ("decode=hf-generate",), ("batching=continuous",)]


def formula(engine, self_positions: int, cross_positions: int) -> int:
    config = engine.loaded.model.config
    return used_bytes_formula(element_bytes=4, heads=config.num_heads, d_kv=config.d_kv,
                              decoder_layers=config.num_decoder_layers,
                              self_positions=self_positions, cross_positions=cross_positions)


@pytest.mark.parametrize("opts", PATHS)
def test_kv_used_counts_the_positions_the_cache_holds_in_every_path(make_engine, opts):
    """One request alone: its own output positions and its (padded) encoder width."""
    engine = make_engine(*opts, "bucketing=on", buckets=(16, 32), max_new_tokens=16)
    if engine.options.batching == "continuous":
        replay_all(engine)
        records = engine.session.freeze().records
    else:
        records = serve(engine, [(9, 6), (20, 3)])
    for record in records:
        assert record.padded_tokens in (16, 32)
        assert record.kv_cache_used_bytes == formula(engine, record.output_tokens,
                                                     record.padded_tokens)


@pytest.mark.parametrize("decode", ["fullgraph", "hf-generate"])
def test_tpot_runs_from_a_requests_own_first_to_its_own_last_token(make_engine, decode):
    engine = make_engine("batching=dynamic", f"decode={decode}", max_new_tokens=16)
    short, long = request(engine, 0, 9, 3), request(engine, 1, 9, 12)
    records = {r.id: r for r in engine.serve([short, long])}
    for record in records.values():
        assert record.tpot_ms == pytest.approx(
            (record.last_token_s - record.first_token_s) * 1e3 / (record.output_tokens - 1))
    # the short one's last token comes before the batch ends; the long one's is the end
    assert records["r0"].last_token_s < records["r0"].end_s
    assert records["r1"].last_token_s == records["r1"].end_s
    assert records["r0"].end_s == records["r1"].end_s


def test_device_sample_labels_the_engine_process_apart_from_the_machine():
    probe = DeviceProbe(torch.device("cpu"))
    deadline = time.process_time() + 0.3
    while time.process_time() < deadline:   # this process's CPU time, not the wall clock
        pass
    sample = probe.sample()
    assert sample.kind == "CPU"
    assert sample.process_cpu_pct is not None and sample.process_cpu_pct > 0
    assert sample.util_pct is not None and 0 <= sample.util_pct <= 100
