"""attention=inductor: the one-query attention equals SDPA's for any shapes and masks, longer
queries keep SDPA, and every decode path serves SDPA's tokens with it."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from transformers.integrations.sdpa_attention import sdpa_attention_forward

from probe.contract.options import OptConfig
from probe.engine.decode.attention import DECODE_ATTENTION, one_query_attention
from tests.conftest import serve, tokens_of
from tests.probe.test_paged_kv import drive, engine_for

MODULE = torch.nn.Module()       # what transformers passes as `module`; neither reads it here
TOLERANCE = {torch.float32: {"atol": 1e-5, "rtol": 1e-5},
             torch.bfloat16: {"atol": 2e-2, "rtol": 2e-2}}


def attention_inputs(seed: int, batch: int, heads: int, queries: int, positions: int, d: int,
                     mask: str, bias: bool, dtype: torch.dtype):
    generator = torch.Generator().manual_seed(seed)

    def draw(*shape: int) -> torch.Tensor:
        return torch.randn(*shape, generator=generator).to(dtype)
    q, k, v = draw(batch, heads, queries, d), draw(batch, heads, positions, d), \
        draw(batch, heads, positions, d)
    keep = torch.rand(batch, 1, queries, positions, generator=generator) > 0.4
    keep[..., 0] = True        # a row with nothing to attend to is not a request's
    masks = {"none": None, "bool": keep,
             "float": torch.where(keep, 0.0, torch.finfo(dtype).min).to(dtype)}
    position_bias = draw(1, heads, queries, positions) if bias else None
    return q, k, v, masks[mask], position_bias


@given(seed=st.integers(0, 2**16), batch=st.integers(1, 3), heads=st.integers(1, 4),
       positions=st.integers(1, 24), d=st.integers(1, 16),
       mask=st.sampled_from(["none", "bool", "float"]), bias=st.booleans(),
       dtype=st.sampled_from([torch.float32, torch.bfloat16]))
def test_one_query_attention_equals_sdpa_for_any_shape_mask_and_bias(seed, batch, heads,
                                                                    positions, d, mask, bias,
                                                                    dtype):
    q, k, v, attention_mask, position_bias = attention_inputs(seed, batch, heads, 1, positions,
                                                              d, mask, bias, dtype)
    ours, _ = one_query_attention(MODULE, q, k, v, attention_mask, scaling=1.0,
                                  position_bias=position_bias)
    sdpa, _ = sdpa_attention_forward(MODULE, q, k, v, attention_mask, scaling=1.0,
                                     position_bias=position_bias)
    assert ours.shape == sdpa.shape == (batch, 1, heads, d) and ours.dtype == dtype
    torch.testing.assert_close(ours.float(), sdpa.float(), **TOLERANCE[dtype])


def test_longer_queries_keep_sdpa():
    q, k, v, attention_mask, position_bias = attention_inputs(3, 2, 4, 5, 9, 8, "bool", True,
                                                              torch.float32)
    ours, _ = one_query_attention(MODULE, q, k, v, attention_mask, scaling=1.0,
                                  position_bias=position_bias)
    sdpa, _ = sdpa_attention_forward(MODULE, q, k, v, attention_mask, scaling=1.0,
                                     position_bias=position_bias)
    assert torch.equal(ours, sdpa)


def test_the_option_gives_the_model_its_own_config_over_the_same_weights(make_engine):
    engine = make_engine("compile=default", "attention=inductor")
    fused = engine.switchboard.model_for(engine.options)
    plain = engine.switchboard.model_for(engine.options.with_option("attention", "sdpa"))
    assert fused is not plain
    assert {m.config._attn_implementation for m in fused.modules() if hasattr(m, "config")} \
        == {DECODE_ATTENTION}
    assert plain.config._attn_implementation == "sdpa"
    assert all(a is b for a, b in zip(fused.parameters(), plain.parameters()))


def test_without_compile_attention_stays_sdpa_with_a_note(make_engine):
    engine = make_engine()
    variant = engine.switchboard.resolve(OptConfig(attention="inductor"))
    assert variant.options.attention == "sdpa"
    assert "attention is an inductor option: it does nothing without compile" in variant.notes


@pytest.mark.parametrize(("decode", "shapes", "guards"), [
    ("fullgraph", [(9, 6), (13, 4), (5, 8)], "full"),
    # generate() under dynamo is the suite's slowest compile (many frames, one more recompile
    # each output length): this one also holds the lean guards' check on it, that generate()'s
    # frames keep the output length, an argument, apart (both inputs pad to the one bucket, so
    # only the output length tells the two requests' graphs apart)
    ("hf-generate", [(9, 6), (13, 4)], "lean")])
def test_one_query_attention_decodes_sdpas_tokens(make_engine, decode, shapes, guards):
    """Bucketed, so the encoder's mask pads some positions out; several output lengths."""
    fused = make_engine(f"decode={decode}", "compile=default", "attention=inductor",
                        "bucketing=on", f"guards={guards}", buckets=(16,))
    records = serve(fused, shapes)
    assert all(r.ok for r in records)
    assert [len(r.tokens) for r in records] == [out for _, out in shapes]
    sdpa = make_engine(f"decode={decode}", "bucketing=on", buckets=(16,))
    serve(sdpa, shapes)
    assert tokens_of(fused) == tokens_of(sdpa)


@pytest.mark.parametrize("layout", ["static", "paged"])
def test_continuous_batching_with_one_query_attention_decodes_sdpas_tokens(layout):
    """Slots at different positions of one batch: each row's own mask over its cache."""
    arrivals = [(0, 7, 9), (1, 15, 4), (2, 3, 12), (0, 11, 6), (5, 20, 3)]
    records = {}
    for attention in ("inductor", "sdpa"):        # one after the other: the probes are global
        engine = engine_for("batching=continuous", f"kv_layout={layout}", "compile=default",
                            f"attention={attention}")
        try:
            records[attention], _ = drive(engine, arrivals, 0)
        finally:
            engine.close()
    fused_records, sdpa_records = records["inductor"], records["sdpa"]
    assert all(r.ok for r in fused_records)
    assert {r.id: r.tokens for r in fused_records} == {r.id: r.tokens for r in sdpa_records}


# Under inductor with the rest of the lean step (the roofline's `+all` row): one compile in
# tests/probe/test_step_levers.py::test_the_lean_step_under_inductor_decodes_the_same_tokens.
