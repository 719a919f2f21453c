"""What a decode path returns for one (possibly batched) call."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from probe.kv_cache import KVBytes


@dataclass(frozen=True)
class DecodeResult:
    tokens: torch.Tensor        # [batch, new_tokens] generated ids, without the start token
    kv: KVBytes
    encoder_done: float         # perf_counter marks, synchronised
    first_token: float
    end: float
