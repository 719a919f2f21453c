"""qkv=fused: each self-attention's q, k and v as one matrix built with the model — the same
logits and tokens as the separate projections, in eager, int8, continuous batching (static and
paged cache) and a compiled step, with no second copy of the weights."""

import pytest
import torch

from probe.engine.decode.fused_qkv import fuse_qkv
from probe.engine.measure.step_roofline import decode_step_bytes, weight_bytes
from tests.conftest import serve, varied_tiny_model

SHAPES = [(9, 6), (5, 8), (12, 4)]


def test_fusing_keeps_the_logits_and_the_weight_bytes():
    separate = varied_tiny_model().model.eval()
    fused = varied_tiny_model().model.eval()
    count = fuse_qkv(fused)
    layers = separate.config.num_layers + separate.config.num_decoder_layers
    assert count == layers
    attention = fused.decoder.block[0].layer[0].SelfAttention
    assert not any(hasattr(attention, name) for name in ("q", "k", "v"))
    assert weight_bytes(fused) == weight_bytes(separate)
    assert decode_step_bytes(fused) == decode_step_bytes(separate)
    ids = torch.randint(1, separate.config.vocab_size, (2, 11), generator=torch.Generator()
                        .manual_seed(0))
    with torch.inference_mode():
        want = separate(input_ids=ids, decoder_input_ids=ids[:, :7]).logits
        got = fused(input_ids=ids, decoder_input_ids=ids[:, :7]).logits
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)


def test_the_switchboard_fuses_without_compile_and_says_nothing(make_engine):
    engine = make_engine("decode=fullgraph")
    from probe.contract.options import OptConfig
    variant = engine.switchboard.resolve(OptConfig(decode="fullgraph", qkv="fused"))
    assert variant.options.qkv == "fused" and variant.options.freezing == "off"
    assert variant.notes == ()
    model = engine.switchboard.model_for(variant.options)
    assert hasattr(model.decoder.block[0].layer[0].SelfAttention, "qkv")
    plain = engine.switchboard.model_for(OptConfig(decode="fullgraph"))
    assert hasattr(plain.decoder.block[0].layer[0].SelfAttention, "q")


@pytest.mark.parametrize("opts", [
    ("decode=fullgraph",),
    ("decode=hf-generate",),
    ("decode=fullgraph", "quant=int8"),
    ("batching=continuous",),
    ("batching=continuous", "kv_layout=paged"),
])
def test_a_fused_engine_decodes_the_separate_tokens(make_engine, opts):
    got = serve(make_engine(*opts, "qkv=fused"), SHAPES)
    want = serve(make_engine(*opts), SHAPES)
    assert all(r.ok for r in got), [r.error for r in got]
    assert [r.tokens for r in got] == [r.tokens for r in want]
    assert len({tuple(r.tokens) for r in want}) > 1     # the comparison can fail


def test_int8_quantizes_the_fused_matrix_as_one_gemm(make_engine):
    from probe.contract.options import OptConfig
    from probe.engine.decode.int8_dynamic import Int8DynamicLinear
    engine = make_engine("decode=fullgraph")
    fused = engine.switchboard.model_for(OptConfig(decode="fullgraph", quant="int8",
                                                   qkv="fused"))
    attention = fused.decoder.block[0].layer[0].SelfAttention
    assert isinstance(attention.qkv, Int8DynamicLinear)
    assert attention.qkv.out_features == 3 * fused.config.num_heads * fused.config.d_kv


@pytest.mark.slow
def test_a_compiled_fused_step_decodes_the_eager_tokens(make_engine):
    shapes = [(9, 6), (9, 6)]
    fused = make_engine("compile=default", "decode=fullgraph", "qkv=fused", "wrapper=cpp",
                        "guards=lean", "attention=inductor", backend="inductor",
                        max_new_tokens=6)
    eager = make_engine("decode=fullgraph", max_new_tokens=6)
    got, want = serve(fused, shapes), serve(eager, shapes)
    assert all(r.ok for r in got), [r.error for r in got]
    assert [r.tokens for r in got] == [r.tokens for r in want]
