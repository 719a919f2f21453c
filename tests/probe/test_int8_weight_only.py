"""int8 weight-only for inductor's GEMV (quant=int8 gemv=inductor): close to the fp32 product it
replaces, a quarter of its weight bytes, picked by the switchboard only where inductor's GEMV
serves it, and compiled into a generated reduction over the int8 values (no GEMM call)."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from probe.contract.options import parse_opts
from probe.engine.decode.int8_dynamic import Int8DynamicLinear
from probe.engine.decode.int8_weight_only import Int8WeightOnlyLinear, quantize_weight_only_int8
from probe.engine.measure.step_roofline import weight_bytes
from probe.engine.switchboard import INT8_GEMV, Switchboard, quant_variant


@settings(max_examples=10, deadline=None)
@given(st.integers(1, 4), st.sampled_from([16, 64]), st.sampled_from([8, 48]), st.booleans())
def test_product_is_the_fp32_ones_within_int8_rounding(rows, k, n, bias) -> None:
    torch.manual_seed(rows * k + n)
    linear = torch.nn.Linear(k, n, bias=bias)
    x = torch.randn(1, rows, k)
    with torch.inference_mode():
        want, got = linear(x), Int8WeightOnlyLinear(linear)(x)
    assert got.shape == want.shape and got.dtype == want.dtype
    # per-channel int8 weights, activations unquantized: each weight off by half a step at most
    step = linear.weight.abs().amax(dim=1) / 127
    bound = (x.abs().sum(-1, keepdim=True) * step / 2).amax()
    assert (got - want).abs().max() <= bound + 1e-5


def test_one_row_and_several_rows_agree() -> None:
    """The decode step's one-row GEMV and the encoder's GEMM are the same product."""
    torch.manual_seed(0)
    layer = Int8WeightOnlyLinear(torch.nn.Linear(32, 24))
    rows = torch.randn(1, 5, 32)
    with torch.inference_mode():
        together = layer(rows)
        alone = torch.cat([layer(rows[:, i:i + 1]) for i in range(5)], dim=1)
    torch.testing.assert_close(alone, together, rtol=1e-5, atol=1e-5)


def test_every_linear_is_replaced_and_the_weights_shrink_fourfold() -> None:
    model = torch.nn.Sequential(torch.nn.Linear(64, 128, bias=False), torch.nn.ReLU(),
                                torch.nn.Linear(128, 64, bias=False))
    before = weight_bytes(model)
    assert quantize_weight_only_int8(model) == 2
    assert all(not isinstance(m, torch.nn.Linear) for m in model.modules())
    # int8 weights and one fp32 scale per output channel
    assert weight_bytes(model) == 64 * 128 + 128 * 64 + 4 * (128 + 64)
    assert weight_bytes(model) <= before / 3.5


def test_the_switchboard_serves_it_only_under_inductor_s_gemv() -> None:
    from tests.conftest import varied_tiny_model
    cpu = torch.device("cpu")
    board = Switchboard(varied_tiny_model().model, cpu, max_new_tokens=4)
    compiled = parse_opts(["compile=default", "decode=fullgraph", "quant=int8"])
    gemv = compiled.with_option("gemv", "inductor")
    assert quant_variant(gemv, cpu) == INT8_GEMV
    assert quant_variant(compiled, cpu) == "int8"
    assert quant_variant(gemv, torch.device("cuda")) == "int8"     # torchao's kernel there
    served = board.resolve(gemv).options
    assert served.quant == "int8" and served.gemv == "inductor"
    linears = {type(m) for m in board.model_for(served).modules()}
    assert Int8WeightOnlyLinear in linears and Int8DynamicLinear not in linears
    assert Int8DynamicLinear in {type(m) for m in board.model_for(compiled).modules()}
    # without compile gemv falls back to the library: the int8 GEMM, not the weight-only model
    eager = board.resolve(gemv.with_option("compile", "off")).options
    assert eager.gemv == "library" and quant_variant(eager, cpu) == "int8"


@pytest.mark.slow
def test_inductor_compiles_one_row_into_a_reduction_over_int8_values() -> None:
    from torch._inductor.utils import run_and_get_code
    torch._dynamo.reset()
    torch.manual_seed(0)
    layer = Int8WeightOnlyLinear(torch.nn.Linear(64, 96))
    x = torch.randn(1, 1, 64)
    with torch.inference_mode():
        eager = layer(x)
        compiled, code = run_and_get_code(torch.compile(layer, fullgraph=True), x)
    torch.testing.assert_close(compiled, eager, rtol=1e-5, atol=1e-5)
    source = "\n".join(code)
    assert "int8_t" in source                 # the kernel reads the int8 values themselves
    assert "mm(" not in source and "addmm" not in source    # no GEMM call, no fp32 copy
