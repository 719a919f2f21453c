"""Continuous batching: iteration-level scheduling over per-slot regions of a static KV cache.

At every decode step, finished sequences leave their slot and waiting requests join free ones.
Each slot decodes at its own position, which neither HF `generate()` nor transformers'
StaticCache (one `cumulative_length` for the whole batch) supports; so this module gives the
self-attention cache per-slot write positions and hands T5's own decoder blocks a per-slot
relative-position bias and mask. Everything else — projections, norms, feed-forward, int8 or
bf16 weights — is the model's own modules, unchanged.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Callable, Union

import torch
from transformers.cache_utils import EncoderDecoderCache, StaticCache, StaticLayer
from transformers.models.mt5.modeling_mt5 import MT5Attention
from transformers.models.t5.modeling_t5 import T5Attention

from probe.engine.decode.slot_graphs import SlotGraphs, ladder, rows_for
from probe.engine.model.loading import DecoderDims, T5Family

Attention = Union[T5Attention, MT5Attention]


def self_attention(model: T5Family, block: int) -> Attention:
    return _attention(model, f"decoder.block.{block}.layer.0.SelfAttention")


def cross_attention(model: T5Family, block: int) -> Attention:
    return _attention(model, f"decoder.block.{block}.layer.1.EncDecAttention")


def _attention(model: T5Family, path: str) -> Attention:
    module = model.get_submodule(path)
    if not isinstance(module, (T5Attention, MT5Attention)):
        raise TypeError(f"{path} is a {type(module).__name__}, not a T5 attention")
    return module


def allocated(layer: object) -> tuple[torch.Tensor, torch.Tensor]:
    """A static cache layer's keys and values: None until allocated, which every cache here is
    up front (early_initialization)."""
    if not isinstance(layer, StaticLayer) or layer.keys is None or layer.values is None:
        raise RuntimeError(f"{type(layer).__name__}: a static cache layer used unallocated")
    return layer.keys, layer.values


class SlotLayer(StaticLayer):
    """A static self-attention layer whose rows (slots) write at their own positions."""

    def __init__(self, max_cache_len: int, positions: torch.Tensor) -> None:
        super().__init__(max_cache_len)
        self.positions = positions            # [slots], shared by every layer, owned by the batcher
        self.rows = torch.arange(positions.shape[0], device=positions.device)

    def update(self, key_states, value_states, *args, **kwargs):
        # key_states: [slots, heads, 1, d_kv] -> written at (slot, :, positions[slot])
        keys, values = allocated(self)
        keys[self.rows, :, self.positions] = key_states[:, :, 0, :]
        values[self.rows, :, self.positions] = value_states[:, :, 0, :]
        return keys, values


def slot_step(model: T5Family, tokens: torch.Tensor, self_bias: torch.Tensor,
              self_mask: torch.Tensor, cross_mask: torch.Tensor,
              cache: EncoderDecoderCache) -> torch.Tensor:
    """One greedy step for every slot: [slots, 1] tokens in, [slots, 1] tokens out."""
    decoder = model.decoder
    hidden = decoder.embed_tokens(tokens)
    # The cross-attention keys/values are already in the cache (is_updated): this tensor only
    # tells the blocks to run their cross-attention.
    placeholder = hidden[:, :1, :]
    for block in decoder.block:
        hidden, _, _ = block(hidden, attention_mask=self_mask, position_bias=self_bias,
                             encoder_hidden_states=placeholder,
                             encoder_attention_mask=cross_mask, cache=cache)
    hidden = decoder.final_layer_norm(hidden)
    if getattr(model.config, "scale_decoder_outputs", False):  # T5's; mt5 never scales
        hidden = hidden * (model.model_dim ** -0.5)
    return model.lm_head(hidden)[:, -1, :].argmax(-1, keepdim=True)


def slot_self_bias_and_mask(attention: Attention, key_positions: torch.Tensor,
                            positions: torch.Tensor, minimum: float,
                            dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    """T5's decoder relative-position bias, per slot (key j seen from query position p), and
    the causal mask that hides every key past each slot's own position."""
    relative = key_positions[None, :] - positions[:, None]                       # [slots, T]
    buckets = T5Attention._relative_position_bucket(
        relative, bidirectional=False, num_buckets=attention.relative_attention_num_buckets,
        max_distance=attention.relative_attention_max_distance)
    bias = attention.relative_attention_bias(buckets)                             # [slots, T, H]
    bias = bias.permute(0, 2, 1).unsqueeze(2).to(dtype)                           # [slots, H, 1, T]
    future = key_positions[None, :] > positions[:, None]
    mask = torch.where(future, minimum, 0.0).to(dtype)[:, None, None, :]
    return bias, mask


@dataclass
class SlotView:
    """What one step reads and writes, over the first `rows` slots of a batcher (views of its
    tensors, so their addresses stay fixed for a CUDA graph)."""
    model: T5Family
    step: Callable
    attention: Attention
    minimum: float
    dtype: torch.dtype
    max_new_tokens: int
    tokens: torch.Tensor            # [rows, 1] each slot's last token, the step's input
    positions: torch.Tensor         # [rows] the next position each slot writes
    occupied: torch.Tensor          # [rows] 1 where a request holds the slot
    cross_mask: torch.Tensor
    key_positions: torch.Tensor
    cache: EncoderDecoderCache
    generated: torch.Tensor         # [rows, max_new_tokens] the tokens of each slot's request
    row_index: torch.Tensor         # arange(rows)


def advance(view: SlotView) -> None:
    """One token for every slot of the view (free slots compute too: the shapes stay static),
    written at the slot's position in `generated`; only occupied slots move to their next
    position. No host synchronisation: the host reads `generated` when a request is done."""
    bias, mask = slot_self_bias_and_mask(view.attention, view.key_positions, view.positions,
                                         view.minimum, view.dtype)
    torch.compiler.cudagraph_mark_step_begin()      # the last step's outputs are copied out
    next_tokens = view.step(view.model, view.tokens, bias, mask, view.cross_mask, view.cache)
    view.tokens.copy_(next_tokens)
    view.generated[view.row_index, view.positions] = next_tokens[:, 0]
    # A running request never needs a position past the cache (the scheduler retires it at its
    # output length ≤ max_new_tokens); the clamp keeps even a misuse inside the region.
    view.positions.add_(view.occupied).clamp_(max=view.max_new_tokens - 1)


def view_cache(cache: EncoderDecoderCache, rows: int, positions: torch.Tensor
               ) -> EncoderDecoderCache:
    """The cache's first `rows` slots: layers that are shallow copies over views."""
    parts = []
    for part in (cache.self_attention_cache, cache.cross_attention_cache):
        viewed = copy.copy(part)
        viewed.layers = []
        for layer in part.layers:
            keys, values = allocated(layer)
            assert isinstance(layer, StaticLayer)       # allocated() checked it
            view = copy.copy(layer)
            view.keys, view.values = keys[:rows], values[:rows]
            view.batch_size = rows
            if isinstance(view, SlotLayer) and isinstance(layer, SlotLayer):
                view.positions = positions
                view.rows = layer.rows[:rows]
            viewed.layers.append(view)
        parts.append(viewed)
    return cross_filled(EncoderDecoderCache(*parts), len(cache.self_attention_cache.layers))


def cross_filled(cache: EncoderDecoderCache, layers: int) -> EncoderDecoderCache:
    """`cache`, every layer's cross-attention marked filled: T5 reads it and projects none."""
    for layer_idx in range(layers):
        cache.is_updated[layer_idx] = True
    return cache


def slot_index(slot_ids: list[int], device: torch.device) -> torch.Tensor:
    """Slot numbers on the device, copied from pinned memory: a copy from pageable memory
    would wait for the device's queue to drain, the steps in flight included."""
    host = torch.tensor(slot_ids, dtype=torch.long, pin_memory=device.type == "cuda")
    return host.to(device, non_blocking=True)


class SlotTensors:
    """What both layouts keep per slot (its last token, position, occupancy and the tokens it
    made) and the step over them; a layout adds where the slots' keys and values live."""

    def __init__(self, model: T5Family, *, slots: int, max_new_tokens: int,
                 max_input_tokens: int, wrap: Callable[[Callable], Callable]) -> None:
        self.dims = dims = DecoderDims.of(model)
        parameter = next(model.parameters())
        self.model, self.slots = model, slots
        self.device, self.dtype = parameter.device, model.decoder.final_layer_norm.weight.dtype
        self.max_new_tokens, self.max_input_tokens = max_new_tokens, max_input_tokens
        self.positions = torch.zeros(slots, dtype=torch.long, device=self.device)
        # 1 for a slot that holds a request: only those advance, so a slot that stays free for
        # any length of time never runs past its region of the cache.
        self.occupied = torch.zeros(slots, dtype=torch.long, device=self.device)
        self.tokens = torch.full((slots, 1), dims.start_token_id, dtype=torch.long,
                                 device=self.device)
        self.generated = torch.zeros((slots, max_new_tokens), dtype=torch.long,
                                     device=self.device)
        self._rows = torch.arange(slots, device=self.device)
        self._minimum = torch.finfo(self.dtype).min
        self._attention = self_attention(model, 0)
        self.occupied_slots: set[int] = set()   # as the host knows them
        self.last_rows = slots          # the rows the last step ran over
        self._step = wrap(slot_step)

    def _start(self, rows: torch.Tensor, slot_ids: list[int]) -> None:
        """The joiners' slots (`rows`, on the device) start decoding from the start token."""
        self.positions[rows] = 0
        self.tokens[rows] = self.dims.start_token_id
        self.occupied[rows] = 1
        self.occupied_slots.update(slot_ids)

    def read(self, slot: int, count: int) -> torch.Tensor:
        """The `count` tokens a slot's request has made (a device view: copy it out before
        the slot is joined again)."""
        return self.generated[slot, :count]

    def rebuild_step(self, wrap: Callable[[Callable], Callable]) -> None:
        """Swap the step function (compile failure → eager); the cache and slots stay."""
        self._step = wrap(slot_step)


class SlotBatcher(SlotTensors):
    """The tensors of `slots` concurrent sequences and the two operations on them: `join`
    (encode new requests into free slots) and `step` (one token for every slot). Each slot
    owns a fixed region, so any request that has a free slot is admitted."""

    layout = "static"

    def __init__(self, model: T5Family, *, slots: int, max_new_tokens: int,
                 max_input_tokens: int, wrap: Callable[[Callable], Callable],
                 graphs: bool = False) -> None:
        """`graphs`: replay a CUDA graph per padded batch size (slot_graphs.py) instead of
        running the step over every slot."""
        super().__init__(model, slots=slots, max_new_tokens=max_new_tokens,
                         max_input_tokens=max_input_tokens, wrap=wrap)
        config = model.config
        self.self_cache = StaticCache(config=config, max_cache_len=max_new_tokens)
        self.self_cache.layers = [SlotLayer(max_new_tokens, self.positions)
                                  for _ in range(self.dims.layers)]
        self.cross_cache = StaticCache(config=config, max_cache_len=max_input_tokens)
        for part in (self.self_cache, self.cross_cache):
            part.early_initialization(slots, config.num_heads, config.d_kv, self.dtype, self.device)
        self.cache = cross_filled(EncoderDecoderCache(self.self_cache, self.cross_cache),
                                  self.dims.layers)
        self.cross_mask = torch.full((slots, 1, 1, max_input_tokens), self._minimum,
                                     dtype=self.dtype, device=self.device)
        self._key_positions = torch.arange(max_new_tokens, device=self.device)
        self.graphs: SlotGraphs | None = None
        if graphs:
            with torch.inference_mode():    # as every step runs: no autograd state captured
                self.graphs = SlotGraphs(ladder(slots),
                                         lambda rows: self._stepper(rows, slot_step), self.device)

    def view(self, rows: int, step: Callable | None = None) -> SlotView:
        """The first `rows` slots (all of them: the batcher's own tensors)."""
        whole = rows == self.slots
        return SlotView(
            self.model, step or self._step, self._attention, self._minimum, self.dtype,
            self.max_new_tokens, self.tokens[:rows], self.positions[:rows],
            self.occupied[:rows], self.cross_mask[:rows], self._key_positions,
            self.cache if whole else view_cache(self.cache, rows, self.positions[:rows]),
            self.generated[:rows], self._rows[:rows])

    def _stepper(self, rows: int, step: Callable) -> Callable[[], None]:
        view = self.view(rows, step)
        return lambda: advance(view)

    def admit(self, input_length: int, output_length: int) -> bool:
        return True

    def fits(self, input_length: int, output_length: int) -> bool:
        """Whether a request of these lengths can ever be served (inputs are cut to the
        region's width; outputs must fit its positions)."""
        return output_length <= self.max_new_tokens

    def capacity_text(self) -> str:
        return f"at most {self.max_new_tokens} output positions"

    def info(self) -> None:
        return None     # no pool: each slot's region is its own

    def cancel_admitted(self) -> None:
        pass            # admitting promises nothing here

    def join(self, slot_ids: list[int], input_ids: torch.Tensor,
             attention_mask: torch.Tensor, output_lengths: list[int] | None = None) -> None:
        """Run the encoder for the joiners (one padded call) and fill their cross-attention
        region; their self-attention region needs no clearing: the mask hides old entries."""
        hidden = self.model.encoder(input_ids=input_ids,
                                    attention_mask=attention_mask).last_hidden_state
        length = hidden.shape[1]
        config = self.model.config
        rows = slot_index(slot_ids, self.device)
        for layer_idx in range(self.dims.layers):
            attention = cross_attention(self.model, layer_idx)
            shape = (len(slot_ids), length, config.num_heads, config.d_kv)
            keys, values = allocated(self.cross_cache.layers[layer_idx])
            keys[rows, :, :length] = attention.k(hidden).view(shape).transpose(1, 2)
            values[rows, :, :length] = attention.v(hidden).view(shape).transpose(1, 2)
        self.cross_mask[rows] = self._minimum
        self.cross_mask[rows, 0, 0, :length] = torch.where(
            attention_mask.bool(), 0.0, self._minimum).to(self.dtype)
        self._start(rows, slot_ids)

    def leave(self, slot_ids: list[int]) -> None:
        """Free the slots: they stop advancing and rewrite their current position (masked for
        nobody) until a join resets them."""
        if slot_ids:
            self.occupied[slot_index(slot_ids, self.device)] = 0
            self.occupied_slots.difference_update(slot_ids)

    def step(self) -> None:
        """One token for every occupied slot, into `generated`: the graph of the smallest
        captured size that holds them, or the step over every slot."""
        if self.graphs is not None and self.occupied_slots:
            self.last_rows = rows_for(max(self.occupied_slots), self.graphs.sizes)
            self.graphs.replay(self.last_rows)
        else:
            self.last_rows = self.slots
            advance(self.view(self.slots))
