"""A PagedAttention-style KV cache for continuous batching (`--opt kv_layout=paged`).

The static layout gives every slot a fixed region (all output positions, all encoder
positions), so most of what a slot holds is never used and the number of slots is fixed by the
worst case. Here the self- and cross-attention keys and values of every decoder layer live in
fixed-size blocks of one pool; each running request has a block table; cross-attention blocks
are taken at join for its real input length, self-attention blocks as its tokens are produced,
and all of them return the moment it leaves. A request is admitted only when the pool can hold
what it will need (its output length is known), so a running request never runs out of blocks
and, when the pool is full, new requests wait to join instead of failing.

Tables are [slots, blocks per slot] tensors whose unused entries point at block 0, a null block
every mask hides. Attention reads each slot's blocks through a gather (vLLM does this inside its
kernel; a gather followed by T5's own attention is the portable equivalent, at the cost of a
copy of every layer at once, kept between steps: for self-attention gathered again only when the
width moves, each step writing its token into the kept copy as well as the pool; for
cross-attention, whose blocks never change, when a request joins or the width moves), and only
the first W blocks of every table: W is the blocks the longest active request needs, rounded
up to a few widths (paged_widths.py), so a step reads about the blocks in use, not the whole
table, and the step compiles to one graph with zero breaks per width.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass
from typing import Callable

import torch
from transformers.cache_utils import EncoderDecoderCache, StaticCache

from probe.contract.records import KVPool
from probe.engine.decode.continuous import (
    SlotTensors,
    SlotView,
    advance,
    cross_attention,
    cross_filled,
    slot_index,
)
from probe.engine.decode.kv_cache import position_bytes
from probe.engine.decode.paged_cache import PagedCrossLayer, PagedSelfLayer, Pool, Window
from probe.engine.decode.paged_widths import attended_width, width_ladder
from probe.engine.model.loading import T5Family

NULL_BLOCK = 0


class BlockAllocator:
    """A free list of block ids 1..total (0 is the null block), with reservations: a request
    reserves what it will ever need when it is admitted and takes blocks lazily."""

    def __init__(self, total: int) -> None:
        self.total = total
        self._free = list(range(total, 0, -1))
        self._reserved = 0

    @property
    def free(self) -> int:
        return len(self._free)

    @property
    def available(self) -> int:
        """Blocks neither taken nor promised."""
        return len(self._free) - self._reserved

    @property
    def used(self) -> int:
        return self.total - len(self._free)

    def reserve(self, blocks: int) -> bool:
        if blocks > self.available:
            return False
        self._reserved += blocks
        return True

    def take(self) -> int:
        """One block, out of a reservation."""
        if self._reserved <= 0:
            raise RuntimeError("take() without a reservation")
        self._reserved -= 1
        return self._free.pop()

    def release(self, blocks: list[int], unreserve: int = 0) -> None:
        if any(b == NULL_BLOCK or b in self._free for b in blocks):
            raise RuntimeError(f"double free or null block in {blocks}")
        self._free.extend(blocks)
        self._reserved -= unreserve


@dataclass
class _SlotBlocks:
    self_blocks: list[int]
    cross_blocks: list[int]
    reserved: int               # blocks promised and not yet taken


class PagedBatcher(SlotTensors):
    """SlotBatcher's interface (join, leave, step) over a block pool, plus admission."""

    layout = "paged"

    def __init__(self, model: T5Family, *, slots: int, max_new_tokens: int,
                 max_input_tokens: int, wrap: Callable[[Callable], Callable], blocks: int,
                 block_tokens: int = 16) -> None:
        super().__init__(model, slots=slots, max_new_tokens=max_new_tokens,
                         max_input_tokens=max_input_tokens, wrap=wrap)
        config, device, layers = model.config, self.device, self.dims.layers
        self.block_tokens = block_tokens
        self.self_width = math.ceil(max_new_tokens / block_tokens)
        self.cross_width = math.ceil(max_input_tokens / block_tokens)
        self.allocator = BlockAllocator(blocks)
        self.pool = Pool(layers, blocks, self.dims.heads, block_tokens, self.dims.d_kv,
                         self.dtype, device)
        self.self_table = torch.full((slots, self.self_width), NULL_BLOCK, dtype=torch.long,
                                     device=device)
        self.cross_table = torch.full((slots, self.cross_width), NULL_BLOCK, dtype=torch.long,
                                      device=device)
        # one ladder for both tables, so the step has one width per compile, not a pair
        self.widths = width_ladder(max(self.self_width, self.cross_width))
        self.widths_used: set[int] = set()      # the widths steps have attended at
        self.window = Window(self.self_table, self.cross_table, self.self_table[:, 0],
                             self.positions.clone(), self.positions.clone(), self._rows,
                             [], [], [], [])
        self._self_gathered: int | None = None                # the width it was gathered at
        self._cross_gathered: tuple[int, int] | None = None   # (joins, width) it was gathered at
        self._joins = 0
        self.self_cache = StaticCache(config=config, max_cache_len=max_new_tokens)
        self.self_cache.layers = [PagedSelfLayer(i, self.pool, self.window)
                                  for i in range(layers)]
        self.cross_cache = StaticCache(config=config, max_cache_len=max_input_tokens)
        self.cross_cache.layers = [PagedCrossLayer(i, self.pool, self.window)
                                   for i in range(layers)]
        self.cache = cross_filled(EncoderDecoderCache(self.self_cache, self.cross_cache), layers)
        self._full_cross_mask = torch.full((slots, 1, 1, self.cross_width * block_tokens),
                                           self._minimum, dtype=self.dtype, device=device)
        self._all_key_positions = torch.arange(self.self_width * block_tokens, device=device)
        # what a step reads: the window's part, set before every step
        self.cross_mask, self._key_positions = self._full_cross_mask, self._all_key_positions
        self._held: dict[int, _SlotBlocks] = {}
        self._admitted: deque[int] = deque()      # blocks promised to the next joiners
        self.blocks_peak = 0
        self.graphs = None          # the window's width changes between steps: no graphs

    @property
    def block_bytes(self) -> int:
        return self.block_tokens * position_bytes(self.dims, self.dtype.itemsize)

    def info(self) -> KVPool:
        static_slot = position_bytes(self.dims, self.dtype.itemsize) * (self.max_new_tokens
                                                                         + self.max_input_tokens)
        return KVPool("paged", self.block_tokens, self.allocator.total, self.blocks_peak,
                      self.block_bytes, blocks_used=self.allocator.used,
                      static_slot_bytes=static_slot)

    def blocks_needed(self, input_length: int, output_length: int) -> tuple[int, int]:
        """(cross, self) blocks a request of these lengths will hold at most."""
        return (math.ceil(input_length / self.block_tokens),
                math.ceil(output_length / self.block_tokens))

    def fits(self, input_length: int, output_length: int) -> bool:
        """Whether a request of these lengths can ever be served: its positions, and its
        blocks in an empty pool."""
        return (output_length <= self.max_new_tokens
                and sum(self.blocks_needed(input_length, output_length)) <= self.allocator.total)

    def capacity_text(self) -> str:
        return (f"at most {self.max_new_tokens} output positions, "
                f"{self.allocator.total} blocks in the pool")

    def admit(self, input_length: int, output_length: int) -> bool:
        """Promise a request everything it will need, or say it must wait. Promises are
        handed to the next `join`'s joiners in order."""
        cross, own = self.blocks_needed(input_length, output_length)
        if not self.allocator.reserve(cross + own):
            return False
        self._admitted.append(cross + own)
        return True

    def join(self, slot_ids: list[int], input_ids: torch.Tensor, attention_mask: torch.Tensor,
             output_lengths: list[int]) -> None:
        """Encode the joiners (one padded call), project every layer's cross-attention keys
        and values for all of them at once (a GEMM per layer and projection, as the static
        layout does), and copy each joiner's blocks into the pool in one copy per pool: the
        positions past a joiner's length inside its last block are padding the mask hides.
        Each joiner was admitted (`admit`) first."""
        for slot in slot_ids:     # held from here on, so a failed join gives it all back
            self._held[slot] = _SlotBlocks([], [], self._admitted.popleft())
        hidden = self.model.encoder(input_ids=input_ids,
                                    attention_mask=attention_mask).last_hidden_state
        lengths = [int(length) for length in attention_mask.sum(dim=1).tolist()]
        counts = [math.ceil(length / self.block_tokens) for length in lengths]
        span = max(counts) * self.block_tokens      # each joiner's positions, padded to blocks
        sources: list[int] = []                     # rows of the projected [joiners · span]
        targets: list[int] = []                     # rows of the pool's [blocks · block_tokens]
        offsets = range(self.block_tokens)
        for index, (slot, length, count) in enumerate(zip(slot_ids, lengths, counts)):
            held = self._held[slot]
            blocks = [self.allocator.take() for _ in range(count)]
            held.cross_blocks, held.reserved = blocks, held.reserved - count
            sources.extend(index * span + position
                           for position in range(count * self.block_tokens))
            targets.extend(block * self.block_tokens + offset
                           for block in blocks for offset in offsets)
            self.cross_table[slot] = NULL_BLOCK
            self.cross_table[slot, :count] = torch.tensor(blocks, device=self.device)
            self.self_table[slot] = NULL_BLOCK
            self._full_cross_mask[slot] = self._minimum
            self._full_cross_mask[slot, 0, 0, :length] = 0.0
        self._write_cross(hidden, span, torch.tensor(sources, device=self.device),
                          torch.tensor(targets, device=self.device))
        self._start(slot_index(slot_ids, self.device), slot_ids)
        self._joins += 1            # the window's cross blocks are stale
        self._note_peak()

    def _write_cross(self, hidden: torch.Tensor, span: int, sources: torch.Tensor,
                     targets: torch.Tensor) -> None:
        """Every layer's keys and values of the encoder states [joiners, length, d_model],
        padded to `span` positions, copied from rows `sources` into pool rows `targets`."""
        dims, joiners = self.dims, hidden.shape[0]
        hidden = torch.nn.functional.pad(hidden, (0, 0, 0, span - hidden.shape[1]))
        attentions = [cross_attention(self.model, layer) for layer in range(dims.layers)]
        for pool, projections in ((self.pool.keys, [a.k for a in attentions]),
                                  (self.pool.values, [a.v for a in attentions])):
            # [layers, joiners, span, inner]
            projected = torch.stack([projection(hidden) for projection in projections])
            rows = projected.view(dims.layers, joiners * span, dims.heads, dims.d_kv)
            pool.view(dims.layers, -1, dims.heads, dims.d_kv).index_copy_(
                1, targets, rows.index_select(1, sources))

    def held_bytes(self, slot: int) -> tuple[int, int]:
        """(self-attention, cross-attention) bytes of the blocks the slot holds now."""
        held = self._held[slot]
        return (len(held.self_blocks) * self.block_bytes,
                len(held.cross_blocks) * self.block_bytes)

    def cancel_admitted(self) -> None:
        """Promises no join took up (a join that failed before it started) go back."""
        while self._admitted:
            self.allocator.release([], unreserve=self._admitted.popleft())

    def leave(self, slot_ids: list[int]) -> None:
        """Return every block of these slots to the pool, and what they had been promised."""
        for slot in slot_ids:
            held = self._held.pop(slot, None)
            if held is not None:
                self.allocator.release(held.self_blocks + held.cross_blocks,
                                       unreserve=held.reserved)
        if slot_ids:
            self.occupied_slots.difference_update(slot_ids)
            rows = slot_index(slot_ids, self.device)
            self.occupied[rows] = 0
            self.self_table[rows] = NULL_BLOCK
            self.cross_table[rows] = NULL_BLOCK

    def _take_self_blocks(self) -> int:
        """Before a step: a slot whose next position starts a block takes one. Returns the
        most blocks any held slot's tables need for this step."""
        positions = self.positions.tolist()
        most = 1
        for slot, held in self._held.items():
            needed = positions[slot] // self.block_tokens + 1
            while len(held.self_blocks) < needed:
                block = self.allocator.take()
                held.reserved -= 1
                self.self_table[slot, len(held.self_blocks)] = block
                held.self_blocks.append(block)
            most = max(most, needed, len(held.cross_blocks))
        self._note_peak()
        return most

    def _set_window(self, needed: int) -> int:
        """Attend over the first W blocks of every table, W the ladder's narrowest width that
        holds `needed` (each table clipped at its own width)."""
        width = attended_width(needed, self.widths)
        own, cross = min(width, self.self_width), min(width, self.cross_width)
        self.window.self_table = self.self_table[:, :own]
        self.window.cross_table = self.cross_table[:, :cross]
        if self._self_gathered != own:
            table = self.window.self_table
            self.window.self_keys = self._gathered(self.pool.keys, table)
            self.window.self_values = self._gathered(self.pool.values, table)
            self._self_gathered = own
        # A leave needs no new gather: the left slot's stale rows are read only by its own
        # free row, whose token nobody reads, until a join (which makes them stale) refills it.
        if self._cross_gathered != (self._joins, cross):
            table = self.window.cross_table
            self.window.cross_keys = self._gathered(self.pool.keys, table)
            self.window.cross_values = self._gathered(self.pool.values, table)
            self._cross_gathered = (self._joins, cross)
        # A free slot's stale position may lie past the window: in the pool it is looked up
        # through the whole table (its row is all null blocks, so it writes the null block),
        # in the window clamped to the last position (it writes its own row)
        self.window.write_blocks = self.self_table[self._rows,
                                                   self.positions // self.block_tokens]
        self.window.write_offsets = self.positions % self.block_tokens
        self.window.write_positions = self.positions.clamp(max=own * self.block_tokens - 1)
        self._key_positions = self._all_key_positions[:own * self.block_tokens]
        self.cross_mask = self._full_cross_mask[..., :cross * self.block_tokens]
        self.widths_used.add(width)
        return width

    def _gathered(self, pool: torch.Tensor, table: torch.Tensor) -> list[torch.Tensor]:
        """Every layer's blocks of `table`, each layer a contiguous [slots, heads, positions,
        d_kv] tensor of its own, the static cache's layout: SDPA reads it faster than the
        gather's transposed view, and a compiled step that writes into one layer's tensor
        need not track its aliasing with the others'."""
        return [layer.contiguous() for layer in self.pool.gather_layers(pool, table)]

    def _note_peak(self) -> None:
        self.blocks_peak = max(self.blocks_peak, self.allocator.used)

    def step(self) -> None:
        """One token for every slot, into `generated`. The blocks a step needs are taken from
        the positions read back (one host sync a step, which the static layout avoids)."""
        self._set_window(self._take_self_blocks())
        advance(SlotView(self.model, self._step, self._attention, self._minimum, self.dtype,
                         self.max_new_tokens, self.tokens, self.positions, self.occupied,
                         self.cross_mask, self._key_positions, self.cache, self.generated,
                         self._rows))
