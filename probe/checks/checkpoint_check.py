"""What a T5-family checkpoint folder must hold to be served, checked without torch and before
anything is allocated: every config field the model is built from has the right JSON type and
a sane range; the model and one request's KV cache fit in this machine's memory; the
safetensors files hold every tensor the model has, at its shape.

Each refusal is one line naming the folder, the field (or tensor) and the limit. The tensor
names and shapes are T5's own (`expected_tensors`; a test checks them against
transformers' T5ForConditionalGeneration and MT5ForConditionalGeneration)."""

from __future__ import annotations

import json
import math
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil

from probe.common.errors import BadCheckpoint
from probe.common.shown import shown

FP32_BYTES = 4
# transformers' defaults when config.json leaves a field out (T5Config, MT5Config)
DEFAULTS: dict[str, dict[str, Any]] = {
    "t5": dict(d_model=512, d_kv=64, d_ff=2048, num_layers=6, num_heads=8, vocab_size=32128,
               relative_attention_num_buckets=32, feed_forward_proj="relu"),
    "mt5": dict(d_model=512, d_kv=64, d_ff=1024, num_layers=8, num_heads=6, vocab_size=250112,
                relative_attention_num_buckets=32, feed_forward_proj="gated-gelu"),
}
# the whole-number fields the model's shape is built from, with the largest value accepted:
# far above any released T5 (t5-11b: d_model 1024, d_ff 65536, 128 heads, 24 layers)
SHAPE_LIMITS = {"d_model": 1 << 16, "d_kv": 1 << 12, "d_ff": 1 << 18, "num_heads": 1 << 10,
                "num_layers": 1 << 10, "num_decoder_layers": 1 << 10, "vocab_size": 1 << 22,
                "relative_attention_num_buckets": 1 << 12,
                "relative_attention_max_distance": 1 << 20}
TOKEN_FIELDS = ("decoder_start_token_id", "pad_token_id", "eos_token_id")
ACTIVATIONS = ("relu", "gelu", "gelu_new", "gelu_fast", "gelu_pytorch_tanh", "quick_gelu",
               "silu", "swish", "tanh", "sigmoid", "mish")
# a model's size against t5-small's, to name the field that makes it too big
REFERENCE = dict(d_model=512, d_kv=64, d_ff=2048, num_heads=8, num_layers=6,
                 num_decoder_layers=6, vocab_size=32128)
SAFETENSORS_HEADER_LIMIT = 100 << 20   # safetensors' own cap on its JSON header
MISSING_SHOWN = 3


@dataclass(frozen=True)
class T5Shape:
    d_model: int
    d_kv: int
    d_ff: int
    num_heads: int
    num_layers: int
    num_decoder_layers: int
    vocab_size: int
    relative_attention_num_buckets: int
    gated: bool

    @property
    def inner(self) -> int:
        return self.num_heads * self.d_kv


def checked_shape(folder: str, model_type: str, config: dict[str, Any]) -> T5Shape:
    """The model's shape from config.json, each field checked: BadCheckpoint naming the first bad."""
    defaults = DEFAULTS[model_type]
    values: dict[str, int] = {}
    for field, limit in SHAPE_LIMITS.items():
        value = config.get(field)
        if value is None:
            value = defaults.get(field, values.get("num_layers"))
            if value is None:
                continue   # relative_attention_max_distance: not part of the shape
        if type(value) is not int or not 1 <= value <= limit:
            raise BadCheckpoint(f"--model {folder}: config.json field {field}: expected a whole "
                              f"number from 1 to {limit:,}, got {shown(value)}")
        values[field] = value
    for field in TOKEN_FIELDS:
        value = config.get(field)
        ids = value if field == "eos_token_id" and isinstance(value, list) else [value]
        for token in ids:
            if token is not None and (type(token) is not int
                                      or not 0 <= token < values["vocab_size"]):
                raise BadCheckpoint(f"--model {folder}: config.json field {field}: expected a "
                                  f"token id from 0 to {values['vocab_size'] - 1:,} (vocab_size)"
                                  f" or null, got {shown(value)}")
    _check_number(folder, config, "layer_norm_epsilon", 0.0, 1.0, closed_low=False)
    _check_number(folder, config, "dropout_rate", 0.0, 1.0, closed_low=True)
    projection = config.get("feed_forward_proj", defaults["feed_forward_proj"])
    activation = projection.removeprefix("gated-") if isinstance(projection, str) else None
    if activation not in ACTIVATIONS:
        raise BadCheckpoint(f"--model {folder}: config.json field feed_forward_proj: expected "
                          f"ACTIVATION or gated-ACTIVATION ({', '.join(ACTIVATIONS)}), got "
                          f"{shown(projection)}")
    return T5Shape(**{k: values[k] for k in REFERENCE},
                   relative_attention_num_buckets=values["relative_attention_num_buckets"],
                   gated=projection.startswith("gated-"))


def _check_number(folder: str, config: dict[str, Any], field: str, low: float, high: float, *,
                  closed_low: bool) -> None:
    value = config.get(field)
    if value is None:
        return
    number_ok = type(value) in (int, float) and math.isfinite(value)
    if not (number_ok and (value >= low if closed_low else value > low) and value < high):
        bracket = "[" if closed_low else "("
        raise BadCheckpoint(f"--model {folder}: config.json field {field}: expected a number in "
                          f"{bracket}{low:g}, {high:g}), got {shown(value)}")


def expected_tensors(shape: T5Shape) -> dict[str, tuple[int, ...]]:
    """Every tensor T5ForConditionalGeneration holds, by its safetensors name, at its shape,
    the embedding once (as `shared.weight`; the embed_tokens and lm_head are tied to it)."""
    d, inner = shape.d_model, shape.inner
    tensors: dict[str, tuple[int, ...]] = {"shared.weight": (shape.vocab_size, d)}
    feed = ("wi_0", "wi_1") if shape.gated else ("wi",)

    def attention(prefix: str, bias: bool) -> None:
        for name in ("q", "k", "v"):
            tensors[f"{prefix}.{name}.weight"] = (inner, d)
        tensors[f"{prefix}.o.weight"] = (d, inner)
        if bias:
            tensors[f"{prefix}.relative_attention_bias.weight"] = (
                shape.relative_attention_num_buckets, shape.num_heads)

    for stack, layers in (("encoder", shape.num_layers), ("decoder", shape.num_decoder_layers)):
        for block in range(layers):
            base = f"{stack}.block.{block}.layer"
            attention(f"{base}.0.SelfAttention", bias=block == 0)
            tensors[f"{base}.0.layer_norm.weight"] = (d,)
            last = 1
            if stack == "decoder":
                attention(f"{base}.1.EncDecAttention", bias=False)
                tensors[f"{base}.1.layer_norm.weight"] = (d,)
                last = 2
            for name in feed:
                tensors[f"{base}.{last}.DenseReluDense.{name}.weight"] = (shape.d_ff, d)
            tensors[f"{base}.{last}.DenseReluDense.wo.weight"] = (d, shape.d_ff)
            tensors[f"{base}.{last}.layer_norm.weight"] = (d,)
        tensors[f"{stack}.final_layer_norm.weight"] = (d,)
    return tensors


EMBEDDING_ALIASES = ("shared.weight", "encoder.embed_tokens.weight", "decoder.embed_tokens.weight")


def parameter_count(shape: T5Shape) -> int:
    return sum(math.prod(dims) for dims in expected_tensors_sizes(shape))


def expected_tensors_sizes(shape: T5Shape):
    """The shapes of expected_tensors without building the names (a huge config is refused
    before millions of names are made)."""
    d, inner, ff = shape.d_model, shape.inner, shape.d_ff
    feed = (2 if shape.gated else 1) * ff * d + d * ff
    attention = 4 * inner * d
    bias = shape.relative_attention_num_buckets * shape.num_heads
    yield (shape.vocab_size, d)
    yield (shape.num_layers, attention + d + feed + d)
    yield (shape.num_decoder_layers, 2 * attention + 3 * d + feed)
    yield (2, bias)
    yield (2, d)


def kv_bytes_per_request(shape: T5Shape, positions: int) -> int:
    """Self- and cross-attention K and V of one request of `positions` tokens, fp32."""
    return shape.num_decoder_layers * 2 * shape.inner * positions * FP32_BYTES * 2


def check_fits_memory(folder: str, shape: T5Shape, positions: int,
                      available: int | None = None, *, source: str = "config.json ") -> None:
    """The fp32 weights and one request's KV cache against the memory available now."""
    available = psutil.virtual_memory().available if available is None else available
    parameters = parameter_count(shape)
    weights, kv = parameters * FP32_BYTES, kv_bytes_per_request(shape, positions)
    if weights + kv <= available:
        return
    field = max(REFERENCE, key=lambda k: getattr(shape, k) / REFERENCE[k])
    raise BadCheckpoint(
        f"--model {folder}: {source}{field}={getattr(shape, field):,} makes "
        f"{parameters:.3g} parameters ({weights / 1e9:,.1f} GB as fp32) and "
        f"{kv / 1e9:,.2f} GB of KV cache per request of {positions:,} tokens; this machine has "
        f"{available / 1e9:,.1f} GB of memory available")


def safetensors_header(path: Path) -> dict[str, Any]:
    """The JSON header of a .safetensors file (8-byte little-endian length, then JSON)."""
    try:
        with path.open("rb") as handle:
            prefix = handle.read(8)
            (length,) = struct.unpack("<Q", prefix) if len(prefix) == 8 else (-1,)
            if not 0 < length <= SAFETENSORS_HEADER_LIMIT:
                raise ValueError("no safetensors header")
            header = json.loads(handle.read(length))
    except OSError as exc:
        raise BadCheckpoint(f"--model {path}: cannot read: {exc.strerror or exc}") from None
    except (ValueError, UnicodeDecodeError):
        raise BadCheckpoint(f"--model {path}: not a safetensors file (its header is not "
                          f"readable)") from None
    if not isinstance(header, dict):
        raise BadCheckpoint(f"--model {path}: not a safetensors file (its header is not an object)")
    return header


def check_tensors(folder: str, shape: T5Shape, files: list[Path]) -> None:
    """Every tensor of the model is in the files, at its shape; extra tensors are ignored."""
    found: dict[str, Any] = {}
    for path in sorted(files):
        found.update({k: v for k, v in safetensors_header(path).items() if k != "__metadata__"})
    for alias in EMBEDDING_ALIASES:  # tied: any one of them is the embedding
        if alias in found:
            found.setdefault("shared.weight", found[alias])
            break
    expected = expected_tensors(shape)
    missing = [name for name in expected if name not in found]
    if missing:
        raise BadCheckpoint(
            f"--model {folder}: the safetensors hold {len(expected) - len(missing)} of the "
            f"model's {len(expected)} tensors (missing: {', '.join(missing[:MISSING_SHOWN])}"
            f"{', …' if len(missing) > MISSING_SHOWN else ''}); it would be served with random "
            f"weights")
    for name, dims in expected.items():
        saved = found[name].get("shape") if isinstance(found[name], dict) else None
        if not isinstance(saved, list) or tuple(saved) != dims:
            raise BadCheckpoint(f"--model {folder}: tensor {name} has shape {shown(saved)}; "
                              f"config.json makes it {list(dims)}")


def check_checkpoint(folder: str, path: Path, model_type: str, config: dict[str, Any],
                     positions: int) -> None:
    """config fields, memory, tensors: in that order (the cheap and the allocating-free first)."""
    shape = checked_shape(folder, model_type, config)
    check_fits_memory(folder, shape, positions)
    check_tensors(folder, shape, list(path.glob("*.safetensors")))
