"""The `hf-generate` decode path: Hugging Face `generate()`, as most teams start.

Under compile the whole `generate()` call is compiled, which is where the graph breaks live
(`.item()` and data-dependent stopping checks). Timing comes from a streamer, as production
token streaming does; its `put` runs eager (dynamo-disabled), like any streamer doing I/O.
"""

from __future__ import annotations

from typing import Callable

import torch
from transformers.generation.streamers import BaseStreamer

from probe.engine.decode import kv_cache
from probe.engine.decode.result import DecodeResult
from probe.engine.measure.timing import mark
from probe.engine.model.loading import DecoderDims, T5Family
from probe.engine.observe.energy_counter import EnergyReading, energy_mark


class TimingStreamer(BaseStreamer):
    """Records when generate() hands out tokens: the first put is the decoder prompt (after the
    encoder ran), the n-th after it the n-th generated token. Marks the encoder, the first token
    and each count in `stops` (a row's last token), so other tokens cost no device sync."""

    def __init__(self, device: torch.device, stops: frozenset[int]) -> None:
        self.device = device
        self.stops = stops
        self.encoder_done: float | None = None
        self.encoder_done_j: EnergyReading | None = None
        self.marks: dict[int, float] = {}
        self._generated = -1

    @torch._dynamo.disable
    def put(self, value: torch.Tensor) -> None:
        self._generated += 1
        if self._generated == 0:
            self.encoder_done = mark(self.device)
            self.encoder_done_j = energy_mark()
        elif self._generated == 1 or self._generated in self.stops:
            self.marks[self._generated] = mark(self.device)

    def end(self) -> None:
        pass


def generate(generate_fn: Callable, model: T5Family, input_ids: torch.Tensor,
             attention_mask: torch.Tensor, new_tokens: int, use_cache: bool,
             stops: frozenset[int] = frozenset()) -> DecodeResult:
    """Greedy, exactly `new_tokens` tokens (min = max), so replay reproduces the decode work."""
    streamer = TimingStreamer(input_ids.device, stops)
    out = generate_fn(input_ids=input_ids, attention_mask=attention_mask,
                      max_new_tokens=new_tokens, min_new_tokens=new_tokens, do_sample=False,
                      num_beams=1, use_cache=use_cache, streamer=streamer,
                      return_dict_in_generate=True)
    end = mark(input_ids.device)
    cache = out.past_key_values if use_cache else None
    kv = kv_cache.measure(
        cache, DecoderDims.of(model),
        self_positions=cache.self_attention_cache.get_seq_length() if cache else 0,
        cross_positions=input_ids.shape[1], batch=input_ids.shape[0])
    marks = {**streamer.marks, new_tokens: end}
    return DecodeResult(tokens=out.sequences[:, 1:], kv=kv,
                        encoder_done=streamer.encoder_done or end,
                        first_token=marks.get(1, end), end=end, token_marks=marks,
                        encoder_done_j=streamer.encoder_done_j)
