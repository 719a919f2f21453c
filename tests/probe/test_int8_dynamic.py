"""The int8 dynamic linear: close to the fp32 product it replaces, a quarter of its weight
bytes, and traceable by dynamo with fullgraph=True (the ScriptObject it wraps is not)."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from probe.engine.decode.int8_dynamic import Int8DynamicLinear, quantize_dynamic_int8
from probe.engine.measure.step_roofline import weight_bytes


@settings(max_examples=10, deadline=None)
@given(st.integers(1, 4), st.sampled_from([16, 64]), st.sampled_from([8, 48]), st.booleans())
def test_product_is_the_fp32_ones_within_int8_rounding(rows, k, n, bias) -> None:
    torch.manual_seed(rows * k + n)
    linear = torch.nn.Linear(k, n, bias=bias)
    x = torch.randn(1, rows, k)
    with torch.inference_mode():
        want, got = linear(x), Int8DynamicLinear(linear)(x)
    assert got.shape == want.shape and got.dtype == want.dtype
    # per-channel int8 weights and per-tensor int8 activations: a few percent of the scale
    assert (got - want).abs().max() <= 0.05 * want.abs().max() + 1e-3


def test_every_linear_is_replaced_and_the_weights_shrink_fourfold() -> None:
    model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(),
                                torch.nn.Linear(128, 64, bias=False))
    before = weight_bytes(model)
    assert quantize_dynamic_int8(model) == 2
    assert all(not isinstance(m, torch.nn.Linear) for m in model.modules())
    # int8 weights; the bias (kept inside the packed weight) is not counted
    assert weight_bytes(model) == (64 * 128 + 128 * 64)
    assert weight_bytes(model) <= before / 4


@pytest.mark.slow
def test_it_compiles_with_fullgraph() -> None:
    torch._dynamo.reset()
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.GELU(),
                                torch.nn.Linear(64, 16))
    quantize_dynamic_int8(model)
    x = torch.randn(1, 1, 32)
    with torch.inference_mode():
        eager = model(x)
        compiled = torch.compile(model, fullgraph=True)(x)
    torch.testing.assert_close(compiled, eager)
