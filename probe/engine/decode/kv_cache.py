"""KV-cache accounting: what a request's cache holds, measured on the tensors and by formula."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from transformers.cache_utils import Cache, EncoderDecoderCache

from probe.engine.model.loading import DecoderDims


@dataclass(frozen=True)
class KVBytes:
    held: int                   # nbytes of the cache tensors
    used: int                   # bytes of the positions actually filled
    self_attention: int         # held by self-attention layers
    cross_attention: int        # held by cross-attention layers

    @classmethod
    def none(cls) -> KVBytes:
        return cls(0, 0, 0, 0)


def _layer_tensors(cache: Cache) -> list[torch.Tensor]:
    tensors = []
    for layer in getattr(cache, "layers", []):
        for name in ("keys", "values"):
            tensor = getattr(layer, name, None)
            if isinstance(tensor, torch.Tensor):
                tensors.append(tensor)
    return tensors


def held_bytes(cache: Cache) -> int:
    return sum(t.nbytes for t in _layer_tensors(cache))


def used_bytes_formula(*, element_bytes: int, heads: int, d_kv: int, decoder_layers: int,
                       self_positions: int, cross_positions: int, batch: int = 1) -> int:
    """2 (K and V) · bytes/element · heads · d_kv · layers · (self + cross positions) · batch."""
    return (2 * element_bytes * heads * d_kv * decoder_layers
            * (self_positions + cross_positions) * batch)


def position_bytes(dims: DecoderDims, element_bytes: int) -> int:
    """One position's keys and values over every decoder layer: what a KV cache holds per
    position."""
    return used_bytes_formula(element_bytes=element_bytes, heads=dims.heads, d_kv=dims.d_kv,
                              decoder_layers=dims.layers, self_positions=1, cross_positions=0)


def measure(cache: EncoderDecoderCache | None, dims: DecoderDims, *, self_positions: int,
            cross_positions: int, batch: int) -> KVBytes:
    """Held bytes from the tensors; used bytes from the positions filled (the analytic formula)."""
    if cache is None:
        return KVBytes.none()
    self_held = held_bytes(cache.self_attention_cache)
    cross_held = held_bytes(cache.cross_attention_cache)
    tensors = _layer_tensors(cache.self_attention_cache) + _layer_tensors(cache.cross_attention_cache)
    element_bytes = tensors[0].element_size() if tensors else 0
    used = position_bytes(dims, element_bytes) * (self_positions + cross_positions) * batch
    return KVBytes(held=self_held + cross_held, used=used, self_attention=self_held,
                   cross_attention=cross_held)
