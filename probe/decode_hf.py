"""The `hf-generate` decode path: Hugging Face `generate()`, as most teams start.

Under compile the whole `generate()` call is compiled, which is where the graph breaks live
(`.item()` and data-dependent stopping checks). Timing comes from a streamer, as production
token streaming does; its `put` runs eager (dynamo-disabled), like any streamer doing I/O.
"""

from __future__ import annotations

from typing import Callable

import torch
from transformers.generation.streamers import BaseStreamer

from probe import kv_cache
from probe.decode_result import DecodeResult
from probe.timing import mark


class TimingStreamer(BaseStreamer):
    """Records when generate() hands out tokens: first put = the decoder prompt after the
    encoder ran, second put = the first generated token."""

    def __init__(self, device: torch.device) -> None:
        self.device = device
        self.marks: list[float] = []

    @torch._dynamo.disable
    def put(self, value: torch.Tensor) -> None:
        if len(self.marks) < 2:
            self.marks.append(mark(self.device))

    def end(self) -> None:
        pass


def generate(generate_fn: Callable, model: torch.nn.Module, input_ids: torch.Tensor,
             attention_mask: torch.Tensor, new_tokens: int, use_cache: bool) -> DecodeResult:
    """Greedy, exactly `new_tokens` tokens (min = max), so replay reproduces the decode work."""
    streamer = TimingStreamer(input_ids.device)
    out = generate_fn(input_ids=input_ids, attention_mask=attention_mask,
                      max_new_tokens=new_tokens, min_new_tokens=new_tokens, do_sample=False,
                      num_beams=1, use_cache=use_cache, streamer=streamer,
                      return_dict_in_generate=True)
    end = mark(input_ids.device)
    cache = out.past_key_values if use_cache else None
    config = model.config
    kv = kv_cache.measure(
        cache, self_positions=cache.self_attention_cache.get_seq_length() if cache else 0,
        cross_positions=input_ids.shape[1], heads=config.num_heads, d_kv=config.d_kv,
        decoder_layers=config.num_decoder_layers, batch=input_ids.shape[0])
    marks = streamer.marks + [end] * (2 - len(streamer.marks))
    return DecodeResult(tokens=out.sequences[:, 1:], kv=kv, encoder_done=marks[0],
                        first_token=marks[1], end=end)
