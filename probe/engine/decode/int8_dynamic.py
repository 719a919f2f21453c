"""int8 with dynamic activation quantization through the CPU's quantized GEMM (torch's x86 /
fbgemm backend): each linear's weight is quantized per output channel and prepacked once; each
call quantizes its activations on the fly and runs an int8 × int8 GEMM (VNNI where the CPU has
it), as CTranslate2's int8 does.

torch.ao's dynamic quantized Linear holds its packed weight in a ScriptObject dynamo cannot
trace (fullgraph fails), so the call goes through a custom op of ours: dynamo and inductor see
one opaque operator whose argument is the packed weight's key in a registry here."""

from __future__ import annotations

import warnings

import torch

from probe.engine.decode.linear_swap import replace_linears

# Process-wide and never emptied: an int8 model built once per engine config keeps its
# packed weights here for the life of the process (a deepcopy shares its keys).
_PACKED: dict[int, object] = {}


# Registered with the plain Library API, not torch.library.custom_op: custom_op wraps every
# call in Python layers of its own, 11 µs a call measured on a 512 × 512 int8 GEMV of ~31 µs
# (AMD EPYC, AVX2, 1 thread, inference mode): ~0.5 ms of a t5-small int8 step's 49 calls.
_LIBRARY = torch.library.Library("infertop", "FRAGMENT")
_LIBRARY.define("int8_dynamic_linear(Tensor x, int key, int out_features) -> Tensor")


def _int8_dynamic_linear(x: torch.Tensor, key: int, out_features: int) -> torch.Tensor:
    if x.dtype == torch.float32:
        return torch.ops.quantized.linear_dynamic(x, _PACKED[key], True)
    return torch.ops.quantized.linear_dynamic(x.float(), _PACKED[key], True).to(x.dtype)


_LIBRARY.impl("int8_dynamic_linear", _int8_dynamic_linear, "CPU")


@torch.library.register_fake("infertop::int8_dynamic_linear")
def _(x: torch.Tensor, key: int, out_features: int) -> torch.Tensor:
    return x.new_empty((*x.shape[:-1], out_features))


def int8_dynamic_linear(x: torch.Tensor, key: int, out_features: int) -> torch.Tensor:
    return torch.ops.infertop.int8_dynamic_linear.default(x, key, out_features)


class Int8DynamicLinear(torch.nn.Module):
    """A Linear's weights as a prepacked int8 matrix (per-channel scales) and its bias."""

    def __init__(self, linear: torch.nn.Linear) -> None:
        super().__init__()
        weight = linear.weight.detach().float()
        scales = weight.abs().amax(dim=1).clamp(min=1e-8) / 127
        bias = None if linear.bias is None else linear.bias.detach().float()
        with warnings.catch_warnings():     # quantized tensors' deprecation notice: for the log
            warnings.simplefilter("ignore")
            qweight = torch.quantize_per_channel(weight, scales, torch.zeros_like(
                scales, dtype=torch.long), 0, torch.qint8)
            packed = torch.ops.quantized.linear_prepack(qweight, bias)
        self.key = len(_PACKED)          # keys are never reused: nothing is removed
        _PACKED[self.key] = packed
        self.in_features, self.out_features = linear.in_features, linear.out_features
        # The int8 values, kept as `weight`: what the roofline counts a step reading, and what
        # T5's feed-forward looks at (an int8 weight: it leaves its input's dtype alone).
        self.weight = torch.nn.Parameter(qweight.int_repr(), requires_grad=False)
        self.weight.int8_dynamic_key = self.key  # type: ignore[attr-defined]  # the roofline's matmul chain calls the op
        self.weight.int8_scales = scales  # type: ignore[attr-defined]  # weight ≈ int8 values × their row's scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return int8_dynamic_linear(x, self.key, self.out_features)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, int8 dynamic"


def quantize_dynamic_int8(model: torch.nn.Module) -> int:
    """Every nn.Linear of the model replaced in place (replace_linears); returns how many."""
    if "x86" in torch.backends.quantized.supported_engines:
        torch.backends.quantized.engine = "x86"
    return replace_linears(model, Int8DynamicLinear)
