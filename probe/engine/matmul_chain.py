"""The decode step's matmuls alone: every weight matrix a cached batch-1 step multiplies by,
run back to back through the library kernel the step itself calls (MKL/oneDNN's GEMV for fp32
and bf16, torchao's int8 weight-only kernel for int8), outside any compiled graph.

It splits the gap between a compiled step and its memory roofline in two: how far these kernels
are from the roofline on their own (kernel efficiency: small matrices stream slower than the
one large matrix the bandwidth is measured on), and the rest of the step (attention, norms,
kernel launches, dynamo's guards), which is the step's time minus this one.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from transformers import PreTrainedModel

from probe.engine.measure.step_roofline import best_seconds, is_cached_cross_projection

CHAIN_REPEATS = 30


def step_matrices(model: PreTrainedModel) -> list[torch.Tensor]:
    """The weights a cached decode step multiplies by, in the order it does: each decoder
    linear except the cross-attention k/v projections (applied once per request), then
    lm_head. The same selection as `roofline.decode_step_bytes` (one predicate for both)."""
    from probe.engine.decode.int8_dynamic import Int8DynamicLinear
    from probe.engine.decode.int8_weight_only import Int8WeightOnlyLinear
    matrices = []
    for name, module in model.get_decoder().named_modules():
        if not isinstance(module, (torch.nn.Linear, Int8DynamicLinear, Int8WeightOnlyLinear)):
            continue
        if is_cached_cross_projection(name):
            continue
        matrices.append(module.weight)
    matrices.append(model.get_output_embeddings().weight)
    return matrices


def _gemv(weight: torch.Tensor, dtype: torch.dtype) -> Callable[[torch.Tensor], torch.Tensor]:
    """x (1 × K) → x @ weightᵀ through the kernel the engine's step uses for this weight."""
    key = getattr(weight, "int8_dynamic_key", None)
    if key is not None:      # quant=int8 on a CPU: the int8 GEMM, activations quantized per call
        from probe.engine.decode.int8_dynamic import int8_dynamic_linear
        return lambda x: int8_dynamic_linear(x, key, weight.shape[0])
    # torchao's Int8Tensor: int8 rows with a scale each; its CPU linear is this aten kernel.
    qdata, scales = getattr(weight, "qdata", None), getattr(weight, "scale", None)
    if qdata is None or scales is None:
        plain = weight.detach()
        return lambda x: torch.mm(x, plain.t())
    scale = scales.reshape(-1).to(dtype)
    return lambda x: torch.ops.aten._weight_int8pack_mm(x, qdata, scale)


def matmul_chain_ms(model: PreTrainedModel, repeats: int = CHAIN_REPEATS) -> float:
    """Best of `repeats` passes over the step's matmuls (ms), timed as the roofline's bandwidth
    is (after a pass that brings the weights in): the floor these kernels set for a step."""
    dtype = model.get_decoder().final_layer_norm.weight.dtype     # the activations' dtype
    matrices = step_matrices(model)
    inputs = {w.shape[1]: torch.randn(1, w.shape[1], dtype=dtype, device=w.device)
              for w in matrices}
    calls = [(_gemv(w, dtype), inputs[w.shape[1]]) for w in matrices]

    def one_pass() -> None:
        for gemv, x in calls:
            gemv(x)
    with torch.inference_mode():
        return best_seconds(one_pass, repeats, matrices[0].device) * 1e3


def matmul_chain_by_precision(copies: dict[str, PreTrainedModel | str],
                              repeats: int = CHAIN_REPEATS) -> dict[str, float | str]:
    """`matmul_chain_ms` for each precision's copy (roofline.precision_copies); a precision
    whose kernel cannot be called here gets its reason."""
    out: dict[str, float | str] = {}
    for precision, model in copies.items():
        if isinstance(model, str):
            out[precision] = model
            continue
        try:
            out[precision] = matmul_chain_ms(model, repeats)
        except Exception as exc:  # a kernel this torch/torchao lacks: say so, do not fail
            out[precision] = f"not measured ({type(exc).__name__}: {exc})"[:200]
    return out
