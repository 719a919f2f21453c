"""qkv=fused: each self-attention's q, k and v projections as one matrix, concatenated once when
the model is built — the layout CTranslate2's converter writes (`fuse_linear`) — so a step runs
one GEMM over the three instead of three over the same input.

transformers' T5 has no fused layout (T5Attention.forward calls `self.q`, `self.k` and `self.v`),
so the self-attentions get the forward below: T5Attention.forward's self-attention branch with
the three projections as one. Everything after the projection — the cache's `update` (static,
per-slot or paged), the relative position bias, the attention implementation, `o` — is
transformers' own. Cross-attention is left as it is: its k and v run once per request (the
first step fills the cross cache) and the batchers project them by name at join. The fused
matrix is an nn.Linear, so int8's linear swap quantizes it like any other: where each GEMM call
costs more than its bytes (int8's dynamic quantization, 512 × 512 at batch 1), one call in
place of three is most of the gain.
"""

from __future__ import annotations

import types
from typing import Union, cast

import torch
from transformers.cache_utils import EncoderDecoderCache
from transformers.models.mt5.modeling_mt5 import MT5Attention, MT5LayerSelfAttention
from transformers.models.t5.modeling_t5 import (
    ALL_ATTENTION_FUNCTIONS,
    T5Attention,
    T5LayerSelfAttention,
    eager_attention_forward,
)

Attention = Union[T5Attention, MT5Attention]


def fused_self_attention_forward(self: Attention, hidden_states: torch.Tensor,
                                 mask: torch.Tensor | None = None,
                                 key_value_states: torch.Tensor | None = None,
                                 position_bias: torch.Tensor | None = None,
                                 cache=None, past_key_values=None, **kwargs):
    """T5Attention.forward for a self-attention (key_value_states is always None here), its
    q, k and v one GEMM over `self.qkv`."""
    cache = cache if cache is not None else past_key_values
    input_shape = hidden_states.shape[:-1]
    past_seen_tokens = cache.get_seq_length(self.layer_idx) if cache is not None else 0
    # cloned as transformers does: a static cache's length changes in place at update
    if isinstance(past_seen_tokens, torch.Tensor):
        past_seen_tokens = past_seen_tokens.clone()
    qkv = cast(torch.nn.Linear, self.qkv)     # set by fuse_qkv
    projected = qkv(hidden_states).view(*input_shape, 3, -1, self.key_value_proj_dim)
    query, key, value = (part.transpose(1, 2) for part in projected.unbind(2))
    if cache is not None:
        layers = (cache.self_attention_cache if isinstance(cache, EncoderDecoderCache)
                  else cache)
        key, value = layers.update(key, value, cast(int, self.layer_idx), kwargs=kwargs)
    if position_bias is None:
        key_length = key.shape[-2]
        if self.has_relative_attention_bias:
            position_bias = self.compute_bias(input_shape[1], key_length, device=query.device,
                                              past_seen_tokens=past_seen_tokens)
        else:
            position_bias = torch.zeros((1, self.n_heads, input_shape[1], key_length),
                                        device=query.device, dtype=query.dtype)
    attention = ALL_ATTENTION_FUNCTIONS.get_interface(self.config._attn_implementation,
                                                      eager_attention_forward)
    output, weights = attention(self, query, key, value, mask, dropout=0.0,
                                scaling=self.scaling, position_bias=position_bias, **kwargs)
    output = self.o(output.reshape(*input_shape, -1).contiguous())
    return output, position_bias, weights


def fuse_qkv(model: torch.nn.Module) -> int:
    """Every self-attention's q, k, v replaced in place by one `qkv` Linear over their
    concatenated weights (the three are removed: no second copy); returns how many."""
    count = 0
    for layer in model.modules():
        if not isinstance(layer, (T5LayerSelfAttention, MT5LayerSelfAttention)):
            continue
        attention = layer.SelfAttention
        parts = (attention.q, attention.k, attention.v)
        weight = torch.cat([part.weight.detach() for part in parts])
        # skip_init: the concatenation is the weight, so no random init to overwrite
        fused = torch.nn.utils.skip_init(torch.nn.Linear, weight.shape[1], weight.shape[0],
                                         bias=False, device="meta")
        fused.weight = torch.nn.Parameter(weight, requires_grad=parts[0].weight.requires_grad)
        attention.qkv = fused
        del attention.q, attention.k, attention.v
        attention.forward = types.MethodType(fused_self_attention_forward, attention)
        count += 1
    return count
