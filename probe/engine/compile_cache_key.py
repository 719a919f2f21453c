"""What identifies compiled code, for the compile cache (probe/engine/compile_cache.py).

A compiled function is valid for exactly what it was traced and lowered against, so the cache
files are named by a digest of all of it: the model's config and weights, the options that
shape the code, the compile backend, the versions of Python, torch and transformers, the CPU
capability torch dispatches to, the source of the code traced (ours and transformers' T5) and,
per function, the shapes, dtypes and strides of its tensor arguments. Anything left out would
let a restart serve code compiled for something else; torch's own checks (its version, the
guards) are the second line, not the first.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import platform
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import torch
from transformers import PreTrainedModel

from probe.contract.options import OptConfig
from probe.engine.decode import (
    attention,
    continuous,
    int8_dynamic,
    int8_weight_only,
    paged,
    static_loop,
)

# Options that do not change the compiled code (the cache's own switch).
NOT_IN_KEY = ("compile_cache",)
# Walking an argument for its tensors stops this deep (a KV cache's layers sit two levels down).
_MAX_DEPTH = 4


@dataclass(frozen=True)
class ConfigKey:
    """Everything but the call's shapes; `fields` is written beside the cache files."""
    fields: dict[str, Any]

    @property
    def digest(self) -> str:
        text = json.dumps(self.fields, sort_keys=True, default=str)
        return hashlib.sha256(text.encode()).hexdigest()[:24]


def weights_digest(model: torch.nn.Module) -> str:
    """sha256 over every parameter's and buffer's name, dtype, shape and bytes (freezing folds
    the weights into the compiled code, so another checkpoint must miss)."""
    digest = hashlib.sha256()
    named = [*model.named_parameters(remove_duplicate=False), *model.named_buffers()]
    for name, tensor in named:
        data = tensor.detach().to("cpu").contiguous()
        digest.update(f"{name}:{data.dtype}:{tuple(data.shape)};".encode())
        digest.update(data.reshape(-1).view(torch.uint8).numpy().tobytes())
    return digest.hexdigest()


def baked_constants(model: torch.nn.Module) -> list[int]:
    """Plain attributes the traced code reads as constants and that differ between processes:
    the int8 layers' keys into their packed-weight registry (probe/engine/decode/int8_dynamic.py)
    are numbered in the order configs were built, so a restart that built another int8
    variant first gets other keys and must miss."""
    from probe.engine.decode.int8_dynamic import Int8DynamicLinear
    return [module.key for module in model.modules() if isinstance(module, Int8DynamicLinear)]


def _source_digest(modules: tuple[ModuleType, ...]) -> str:
    digest = hashlib.sha256()
    for module in modules:
        try:
            digest.update(inspect.getsource(module).encode())
        except (OSError, TypeError):            # no source: key on the module's name only
            digest.update(module.__name__.encode())
    return digest.hexdigest()[:24]


def traced_sources() -> str:
    """The code dynamo reads when it traces a decode step: ours and transformers' T5."""
    import transformers.cache_utils
    import transformers.models.t5.modeling_t5

    return _source_digest((static_loop, continuous, paged, attention, int8_dynamic,
                           int8_weight_only,
                           transformers.models.t5.modeling_t5, transformers.cache_utils))


def config_key(model: PreTrainedModel, master_weights: str, options: OptConfig, *,
               backend: str, device: torch.device) -> ConfigKey:
    import transformers
    served = {k: v for k, v in options.as_dict().items() if k not in NOT_IN_KEY}
    return ConfigKey({
        "format": 1,
        "model_config": model.config.to_dict(),
        "weights": master_weights,
        "baked_constants": baked_constants(model),
        "options": served,
        "backend": backend,
        "device": str(device),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "threads": torch.get_num_threads(),
        "sources": traced_sources(),
    })


def _describe(value: Any, depth: int, out: list[str]) -> None:
    if isinstance(value, torch.Tensor):
        out.append(f"T{tuple(value.shape)}{value.stride()}{value.dtype}{value.device}"
                   f"{value.requires_grad}")
    elif isinstance(value, torch.nn.Module):
        out.append("M")                          # the model: its identity is in the ConfigKey
    elif isinstance(value, (int, float, bool, str)) or value is None:
        out.append(repr(value))
    elif depth >= _MAX_DEPTH:
        out.append(type(value).__name__)
    elif isinstance(value, (list, tuple)):
        out.append(f"{type(value).__name__}[")
        for item in value:
            _describe(item, depth + 1, out)
        out.append("]")
    elif isinstance(value, dict):
        out.append("{")
        for key in sorted(value, key=repr):
            out.append(repr(key))
            _describe(value[key], depth + 1, out)
        out.append("}")
    else:                                        # a KV cache and its layers: their tensors
        out.append(f"{type(value).__name__}(")
        for key, item in sorted(vars(value).items()) if hasattr(value, "__dict__") else ():
            out.append(key)
            _describe(item, depth + 1, out)
        out.append(")")


def call_signature(args: tuple) -> str:
    """A digest of the arguments' structure: the shapes, strides, dtypes and devices of every
    tensor reachable from them, and their plain values (the compiled code specialises on all)."""
    parts: list[str] = []
    for arg in args:
        _describe(arg, 0, parts)
    return hashlib.sha256("|".join(parts).encode()).hexdigest()[:16]
