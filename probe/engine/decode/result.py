"""What a decode path returns for one (possibly batched) call."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

import torch

from probe.engine.decode.kv_cache import KVBytes
from probe.engine.observe.energy_counter import EnergyReading


@dataclass(frozen=True)
class DecodeResult:
    tokens: torch.Tensor        # [batch, new_tokens] generated ids, without the start token
    kv: KVBytes
    encoder_done: float         # perf_counter marks, synchronised
    first_token: float
    end: float
    # perf_counter after the n-th token, for each n a row of the batch stops at (a row's own
    # last token, which comes before the batch's end when lengths differ)
    token_marks: Mapping[int, float] = field(default_factory=dict)
    # the energy counter's reading at `encoder_done` (joules), where the engine reads one
    encoder_done_j: EnergyReading | None = None

    def last_token(self, count: int) -> float:
        return self.token_marks.get(count, self.end)
