"""attention=inductor: a decode step's attention — one query against the cache — written as a
multiply, a sum and a softmax, so inductor generates it and fuses it with what surrounds it.

T5's attention in transformers goes through `scaled_dot_product_attention`, which inductor
cannot look inside: in the compiled decode step it stays an external call, two per decoder
layer (self and cross), each with its own dispatch, setup and parallel region. For a single
query that work is a handful of small reductions, which inductor writes as a kernel or two.
Registered through transformers' own `AttentionInterface`, so T5's modules, caches (static and
paged) and masks are untouched; queries longer than one (the encoder, the uncached decoder)
keep SDPA.
"""

from __future__ import annotations

import torch
from transformers import AttentionInterface, PreTrainedModel
from transformers.integrations.sdpa_attention import (
    create_position_bias_mask,
    sdpa_attention_forward,
)
from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

# The name the model config's `_attn_implementation` takes (transformers' registry key).
DECODE_ATTENTION = "infertop_one_query"
# The attention option's value → transformers' implementation name.
IMPLEMENTATIONS = {"sdpa": "sdpa", "inductor": DECODE_ATTENTION}


def one_query_attention(module: torch.nn.Module, query: torch.Tensor, key: torch.Tensor,
                        value: torch.Tensor, attention_mask: torch.Tensor | None,
                        dropout: float = 0.0, scaling: float | None = None,
                        position_bias: torch.Tensor | None = None,
                        **kwargs) -> tuple[torch.Tensor, None]:
    """transformers' attention signature: query [batch, heads, q, d], key/value
    [batch, heads, positions, d]; returns [batch, q, heads, d]. Scores and softmax in fp32 (as
    SDPA's CPU kernels accumulate), whatever the model's dtype."""
    if query.shape[2] != 1 or dropout:
        return sdpa_attention_forward(module, query, key, value, attention_mask,
                                      dropout=dropout, scaling=scaling,
                                      position_bias=position_bias, **kwargs)
    if scaling is None:
        scaling = query.shape[-1] ** -0.5
    scores = (query.float() * key.float()).sum(-1).unsqueeze(-2) * scaling    # [b, h, 1, L]
    if position_bias is not None:
        scores = scores + create_position_bias_mask(position_bias, attention_mask, False,
                                                    query, key).float()
    elif attention_mask is not None and attention_mask.dtype == torch.bool:
        scores = scores.masked_fill(~attention_mask, torch.finfo(scores.dtype).min)
    elif attention_mask is not None:
        scores = scores + attention_mask.float()
    weights = scores.softmax(-1)                                               # [b, h, 1, L]
    output = (weights.transpose(-1, -2) * value.float()).sum(-2, keepdim=True)  # [b, h, 1, d]
    return output.to(value.dtype).transpose(1, 2).contiguous(), None


AttentionInterface.register(DECODE_ATTENTION, one_query_attention)
# The masks SDPA gets: an implementation transformers has no mask function for gets no mask at
# all (it is taken for one that masks by itself), and would attend to the cache's empty positions.
AttentionMaskInterface.register(DECODE_ATTENTION, sdpa_mask)


def set_attention(model: PreTrainedModel, attention: str) -> None:
    """Point the model at an attention option's implementation (transformers sets it on every
    submodule's config)."""
    model.set_attn_implementation(IMPLEMENTATIONS[attention])
