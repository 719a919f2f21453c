"""The step's matmuls alone: the same matrices the roofline counts, through the same math."""

import torch

from probe.engine.matmul_chain import _gemv, matmul_chain_by_precision, step_matrices
from probe.engine.measure.step_roofline import _tensor_bytes, decode_step_bytes
from probe.engine.precision_copies import precision_copies
from tests.probe.test_roofline import SMALLISH, _t5


def test_the_chain_reads_the_roofline_s_matrices() -> None:
    model = _t5(**SMALLISH)
    d, layers = 64, 3
    norms_and_bias = 4 * (3 * d * layers + d + 32 * 4)   # the only step bytes not in a matmul
    matrices = sum(_tensor_bytes(w) for w in step_matrices(model))
    assert matrices == decode_step_bytes(model).total - norms_and_bias
    assert step_matrices(model)[-1] is model.get_output_embeddings().weight


def test_each_precision_s_kernel_computes_its_linear() -> None:
    copies = precision_copies(_t5(**SMALLISH))
    for precision, model in copies.items():
        if isinstance(model, str):          # int8 refused here: its reason, not a model
            continue
        dtype = model.get_decoder().final_layer_norm.weight.dtype
        for weight in step_matrices(model)[:3]:
            x = torch.randn(1, weight.shape[1], dtype=dtype)
            if hasattr(weight, "int8_dynamic_key"):     # the CPU's int8: activations too
                real = (weight.float() * weight.int8_scales[:, None]).to(dtype)
                expected = torch.nn.functional.linear(x, real)
                error = (_gemv(weight, dtype)(x) - expected).abs().max()
                assert error <= 0.05 * expected.abs().max(), precision
                continue
            expected = torch.nn.functional.linear(x, weight)
            torch.testing.assert_close(_gemv(weight, dtype)(x), expected, atol=2e-2,
                                       rtol=2e-2, msg=lambda m, p=precision: f"{p}: {m}")
    times = matmul_chain_by_precision(copies, repeats=3)
    assert isinstance(times["fp32"], float) and times["fp32"] > 0
    assert isinstance(times["bf16"], float) and times["bf16"] > 0
    if not isinstance(copies["int8"], str):     # torchao's int8 tensors, its kernel timed
        first = step_matrices(copies["int8"])[0]
        assert hasattr(first, "qdata") or hasattr(first, "int8_dynamic_key")
        assert isinstance(times["int8"], float) and times["int8"] > 0
