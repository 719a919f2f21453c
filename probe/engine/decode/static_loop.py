"""The `fullgraph` decode path: our own greedy loop over a static KV cache.

The per-token step has no data-dependent Python (no `.item()`, no stopping check: the output
length is fixed), so it compiles with `fullgraph=True` into one graph with zero breaks. Three
functions are compiled separately, so their compile ids and recompile reasons read clearly:
`encode` (specialises on the input length), `prefill_step` (the first decoder step, which also
fills the cross-attention cache) and `decode_step` (every later token).

Under CUDA graphs (compile=reduce-overhead) a compiled function's outputs live in the graph's
memory pool and the next replay overwrites them. So each step begins with
`torch.compiler.cudagraph_mark_step_begin()`, and whatever outlives a step is copied out at
once: the encoder's output (read by every step) and each step's token.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Callable

import torch
from transformers.cache_utils import EncoderDecoderCache, StaticCache

from probe.engine.decode import kv_cache
from probe.engine.decode.result import DecodeResult
from probe.engine.measure.timing import mark
from probe.engine.model.loading import DecoderDims, T5Family
from probe.engine.observe.energy_counter import energy_mark

CACHE_POOL_SIZE = 8


def encode(model: T5Family, input_ids: torch.Tensor,
           attention_mask: torch.Tensor) -> torch.Tensor:
    return model.encoder(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state


def _next_token(model, token, hidden, attention_mask, cache, position) -> torch.Tensor:
    logits = model(decoder_input_ids=token, encoder_outputs=(hidden,),
                   attention_mask=attention_mask, cache=cache, cache_position=position,
                   use_cache=True).logits
    return logits[:, -1, :].argmax(-1, keepdim=True)


# Two functions with one body on purpose: dynamo keeps compiled code per code object, so the
# first step (which fills the cross-attention cache) and the steady-state step get a graph each
# instead of recompiling one function back and forth on the cache's `is_updated` flag.
def prefill_step(model, token, hidden, attention_mask, cache, position) -> torch.Tensor:
    return _next_token(model, token, hidden, attention_mask, cache, position)


def decode_step(model, token, hidden, attention_mask, cache, position) -> torch.Tensor:
    return _next_token(model, token, hidden, attention_mask, cache, position)


def uncached_step(model, prefix, hidden, attention_mask) -> torch.Tensor:
    """kv_cache=off: recompute the decoder over the whole prefix for every token."""
    logits = model(decoder_input_ids=prefix, encoder_outputs=(hidden,),
                   attention_mask=attention_mask, use_cache=False).logits
    return logits[:, -1, :].argmax(-1, keepdim=True)


def copy_out(output: torch.Tensor) -> torch.Tensor:
    """A copy of a compiled function's output that the next CUDA-graph replay cannot overwrite
    (an eager or plain compiled output is copied too: one small copy, one rule)."""
    return output.clone()


class StaticGreedyDecoder:
    """Greedy decoding of exactly `new_tokens` tokens; `wrap` compiles each function (or not)."""

    def __init__(self, model: T5Family, *, max_new_tokens: int,
                 use_cache: bool, wrap: Callable[[Callable], Callable]) -> None:
        self.model = model
        self.dims = DecoderDims.of(model)
        self.max_new_tokens = max_new_tokens
        self.use_cache = use_cache
        self.encode = wrap(encode)
        self.prefill_step = wrap(prefill_step)
        self.decode_step = wrap(decode_step)
        self.uncached_step = wrap(uncached_step)
        # Reused across requests (reset, not reallocated): a static cache keeps its addresses,
        # which CUDA graphs need and which spares an allocation per request.
        self._caches: OrderedDict[tuple, EncoderDecoderCache] = OrderedDict()

    def _cache(self, batch: int, encoder_length: int, dtype: torch.dtype,
               device: torch.device) -> EncoderDecoderCache:
        key = (batch, encoder_length, dtype, device)
        cache = self._caches.pop(key, None)
        if cache is None:
            config = self.model.config
            cache = EncoderDecoderCache(
                StaticCache(config=config, max_cache_len=self.max_new_tokens),
                StaticCache(config=config, max_cache_len=encoder_length))
            # Allocate now rather than on the first update, so the compiled prefill step sees
            # one cache state (initialised) instead of compiling once for each.
            for part in (cache.self_attention_cache, cache.cross_attention_cache):
                part.early_initialization(batch, config.num_heads, config.d_kv, dtype, device)
        else:
            cache.reset()
        self._caches[key] = cache
        while len(self._caches) > CACHE_POOL_SIZE:
            self._caches.popitem(last=False)
        return cache

    def generate(self, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                 new_tokens: int, stops: frozenset[int] = frozenset()) -> DecodeResult:
        """`stops`: token counts at which a row of the batch is done (its last token is timed)."""
        if new_tokens > self.max_new_tokens:
            raise ValueError(f"{new_tokens} output tokens exceed the static cache's "
                             f"{self.max_new_tokens} positions")
        device = input_ids.device
        batch = input_ids.shape[0]
        torch.compiler.cudagraph_mark_step_begin()
        hidden = copy_out(self.encode(self.model, input_ids, attention_mask))
        encoder_done = mark(device)
        encoder_done_j = energy_mark()
        start = torch.full((batch, 1), self.dims.start_token_id, dtype=torch.long,
                           device=device)
        marks: dict[int, float] = {}
        if self.use_cache:
            tokens, cache = self._cached_loop(start, hidden, attention_mask, new_tokens, stops,
                                              marks)
        else:
            tokens = self._uncached_loop(start, hidden, attention_mask, new_tokens, stops, marks)
            cache = None
        end = mark(device)
        kv = kv_cache.measure(cache, self.dims, self_positions=new_tokens,
                              cross_positions=input_ids.shape[1], batch=batch)
        marks[new_tokens] = end
        return DecodeResult(tokens=tokens, kv=kv, encoder_done=encoder_done,
                            first_token=marks.get(1, end), end=end, token_marks=marks,
                            encoder_done_j=encoder_done_j)

    @staticmethod
    def _mark_if_wanted(count: int, stops: frozenset[int], marks: dict[int, float],
                        device: torch.device) -> None:
        """Time the first token, and each row's last one (a sync only where a row stops)."""
        if count == 1 or count in stops:
            marks[count] = mark(device)

    def _cached_loop(self, token, hidden, attention_mask, new_tokens, stops, marks):
        device = token.device
        cache = self._cache(token.shape[0], hidden.shape[1], hidden.dtype, device)
        generated = []
        # advanced on the device: a host-to-device copy of a new position each token would
        # wait for the GPU's queue to drain (pageable memory)
        position = torch.zeros(1, dtype=torch.long, device=device)
        for step in range(new_tokens):
            step_fn = self.prefill_step if step == 0 else self.decode_step
            torch.compiler.cudagraph_mark_step_begin()
            token = copy_out(step_fn(self.model, token, hidden, attention_mask, cache, position))
            position.add_(1)
            generated.append(token)
            self._mark_if_wanted(step + 1, stops, marks, device)
        return torch.cat(generated, dim=1), cache

    def _uncached_loop(self, start, hidden, attention_mask, new_tokens, stops, marks):
        prefix = start
        for step in range(new_tokens):
            torch.compiler.cudagraph_mark_step_begin()
            token = copy_out(self.uncached_step(self.model, prefix, hidden, attention_mask))
            prefix = torch.cat([prefix, token], dim=1)
            self._mark_if_wanted(step + 1, stops, marks, start.device)
        return prefix[:, 1:]
