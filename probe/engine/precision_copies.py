"""The model in each precision the roofline compares (fp32, bf16, int8), and the bytes a cached
decode step reads in each: the int8 copy is the engine's own quantization, so this sits above
the decode paths (probe/engine/switchboard.py), beside the engine."""

from __future__ import annotations

import copy

import torch
from transformers import PreTrainedModel

from probe.engine.measure.step_roofline import decode_step_bytes
from probe.engine.switchboard import quantize


def precision_copies(model: PreTrainedModel) -> dict[str, PreTrainedModel | str]:
    """The model in fp32, bf16, and int8 (on the bf16 model, the engine's int8: on a CPU int8
    weights for its int8 GEMM), bf16 and int8 as converted copies; a precision that cannot be built here gets its
    reason instead."""
    half = copy.deepcopy(model)
    module: torch.nn.Module = half      # nn.Module's `to`, as in Engine.__init__
    module.to(torch.bfloat16)
    int8 = copy.deepcopy(half)
    return {"fp32": model.float(), "bf16": half, "int8": quantize(int8, "int8") or int8}


def step_bytes_by_precision(model: PreTrainedModel,
                            copies: dict[str, PreTrainedModel | str] | None = None
                            ) -> dict[str, int | str]:
    """Bytes a cached step reads in each precision, measured on its converted copy (made here
    unless the caller already has them)."""
    copies = copies if copies is not None else precision_copies(model)
    return {precision: copy if isinstance(copy, str) else decode_step_bytes(copy).total
            for precision, copy in copies.items()}
