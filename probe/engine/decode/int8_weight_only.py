"""int8 weight-only for inductor's own GEMV (`quant=int8 gemv=inductor`): each linear keeps int8
weights with one scale per output channel, activations stay in the model's dtype, and a single
row (the batch-1 decode step) is multiplied as a multiply-and-sum over the int8 values
converted where they are read. Under inductor that is one generated reduction per linear that
reads one byte per weight, fused with what surrounds it: no opaque operator, no quantized
activations, no fp32 copy of the weights.

Why not torch's kernel for this (`aten._weight_int8pack_mm`, what torchao's Int8WeightOnlyConfig
calls on a CPU): on this project's AMD EPYC VM (torch 2.14) it streams ~1.5 GB/s with fp32
activations, a tenth of the fp32 GEMV (docs/engine-vs-peer.md). Several rows (the encoder, the
cross-attention k/v of the first step) dequantize the weights and call the library's GEMM: they
run once per request."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from probe.engine.decode.linear_swap import replace_linears


class Int8WeightOnlyLinear(torch.nn.Module):
    """A Linear's weights as int8 rows and their scales (weight ≈ int8 values × its row's scale)."""

    def __init__(self, linear: torch.nn.Linear) -> None:
        super().__init__()
        weight = linear.weight.detach()
        dtype = weight.dtype
        scales = weight.float().abs().amax(dim=1).clamp(min=1e-8) / 127
        values = (weight.float() / scales[:, None]).round().clamp(-127, 127).to(torch.int8)
        # `weight` in int8: what the roofline counts a step reading, and what T5's feed-forward
        # looks at (an int8 weight: it leaves its input's dtype alone).
        self.weight = torch.nn.Parameter(values, requires_grad=False)
        self.scales = torch.nn.Parameter(scales.to(dtype), requires_grad=False)
        self.bias = (None if linear.bias is None
                     else torch.nn.Parameter(linear.bias.detach(), requires_grad=False))
        self.in_features, self.out_features = linear.in_features, linear.out_features

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.numel() == x.shape[-1]:       # one row: the GEMV inductor generates and fuses
            out = (x.unsqueeze(-2) * self.weight.to(x.dtype)).sum(-1)
        else:
            out = F.linear(x, self.weight.to(x.dtype))
        out = out * self.scales
        return out if self.bias is None else out + self.bias

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, int8 weight-only"


def quantize_weight_only_int8(model: torch.nn.Module) -> int:
    """Every nn.Linear of the model replaced in place (replace_linears); returns how many."""
    return replace_linears(model, Int8WeightOnlyLinear)
