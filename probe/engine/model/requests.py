"""A request as the engine sees it, and how its input ids are made."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from transformers import PreTrainedTokenizerBase

FIRST_ORDINARY_ID = 3  # 0 pad, 1 eos, 2 unk: never drawn for synthetic inputs


@dataclass(frozen=True)
class EngineRequest:
    id: str
    seq: int
    input_length: int
    output_length: int
    arrival_s: float            # scheduled arrival on the session clock
    text: str | None = None


def input_ids(request: EngineRequest, tokenizer: PreTrainedTokenizerBase, vocab_size: int,
              max_input: int) -> list[int]:
    """Text goes through the tokenizer; a length becomes deterministic ids (seeded by seq), since
    traces carry lengths, not contents."""
    if request.text is not None:
        ids = tokenizer(request.text, add_special_tokens=False).input_ids[:max_input]
        return ids or [FIRST_ORDINARY_ID]
    generator = torch.Generator().manual_seed(request.seq)
    length = min(request.input_length, max_input)
    return torch.randint(FIRST_ORDINARY_ID, vocab_size, (length,), generator=generator).tolist()


def pad_batch(rows: list[list[int]], width: int, pad_id: int,
              device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    """Right-pad to `width`; the attention mask hides the padding from the encoder. To a GPU
    from pinned memory, without waiting: a copy from pageable memory waits for the device's
    queue to drain, which would stall a batching loop that runs ahead of the GPU."""
    pinned = device.type == "cuda"
    ids = torch.full((len(rows), width), pad_id, dtype=torch.long, pin_memory=pinned)
    mask = torch.zeros((len(rows), width), dtype=torch.long, pin_memory=pinned)
    for i, row in enumerate(rows):
        ids[i, :len(row)] = torch.tensor(row, dtype=torch.long)
        mask[i, :len(row)] = 1
    return ids.to(device, non_blocking=pinned), mask.to(device, non_blocking=pinned)
