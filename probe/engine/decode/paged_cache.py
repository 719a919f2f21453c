"""The paged layout's storage and what transformers' cache reads of it: one pool of blocks for
every decoder layer's keys and values, the window a step attends over, and the cache layers
that write into the pool and read through the window."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from transformers.cache_utils import CacheLayerMixin


class Pool:
    """Keys and values of every decoder layer: [layers, blocks + 1, block_tokens, heads, d_kv]
    (positions before heads, as vLLM's FlashAttention backend lays out its cache: a gathered
    table is then one copy, and its [slots, heads, positions, d_kv] view a transpose, not a
    second copy)."""

    def __init__(self, layers: int, blocks: int, heads: int, block_tokens: int, d_kv: int,
                 dtype: torch.dtype, device: torch.device) -> None:
        shape = (layers, blocks + 1, block_tokens, heads, d_kv)
        self.keys = torch.zeros(shape, dtype=dtype, device=device)
        self.values = torch.zeros(shape, dtype=dtype, device=device)

    @staticmethod
    def gather_layers(pool: torch.Tensor, table: torch.Tensor) -> list[torch.Tensor]:
        """[slots, blocks] table → each layer's [slots, heads, blocks · block_tokens, d_kv], a
        view of one index_select along the blocks (one dispatch, one copy of whole contiguous
        blocks; advanced indexing, `pool[layer][table]`, took ~113 µs a call against SDPA's
        ~50 for t5-tiny's 8 slots and 4 blocks)."""
        slots, nb = table.shape
        layers, _, bt, heads, d = pool.shape
        blocks = torch.index_select(pool, 1, table.reshape(-1))   # [layers, slots·nb, bt, h, d]
        return list(blocks.view(layers, slots, nb * bt, heads, d).transpose(2, 3).unbind(0))


@dataclass
class Window:
    """What the next step reads, replaced before every step and shared by every layer: the
    part of each table it attends over (views of the batcher's tables), and where each slot's
    new token goes — (block, offset) in the pool, its position in the window — worked out once
    per step rather than once per layer. The gathered keys and values are kept from step to
    step (`PagedBatcher._set_window`) and gathered again only when they go stale: the cross
    window (which never changes while a request decodes) after a join or at a new width, the
    self window at a new width only, since each step writes its new token into the window as
    well as the pool, and the positions a joiner inherits from a slot's last request are past
    its own, which its mask hides."""
    self_table: torch.Tensor
    cross_table: torch.Tensor
    write_blocks: torch.Tensor
    write_offsets: torch.Tensor
    write_positions: torch.Tensor
    rows: torch.Tensor
    self_keys: list[torch.Tensor]
    self_values: list[torch.Tensor]
    cross_keys: list[torch.Tensor]
    cross_values: list[torch.Tensor]


class PagedLayer(CacheLayerMixin):
    """What transformers' Cache asks of a layer; the paged layers keep no tensors of their own
    (positions and lengths live in the batcher's tables), so most answers are trivial."""
    is_compileable = True

    def lazy_initialization(self, key_states, value_states) -> None:
        pass

    def get_mask_sizes(self, query_length: int) -> tuple[int, int]:
        return 0, 0     # unused: the step hands the blocks their own masks

    def get_seq_length(self) -> int:
        return 0        # unused: the step hands the blocks their position bias

    def get_max_length(self) -> int:
        return -1


class PagedSelfLayer(PagedLayer):
    """Self-attention: the new token's k/v go to the pool at the window's (block, offset) and
    into the kept window at its position; attention reads the window."""

    def __init__(self, layer: int, pool: Pool, window: Window) -> None:
        super().__init__()
        self.is_initialized = True
        self.layer, self.pool, self.window = layer, pool, window

    def update(self, key_states, value_states, *args, **kwargs):
        window = self.window
        key, value = key_states[:, :, 0, :], value_states[:, :, 0, :]
        self.pool.keys[self.layer][window.write_blocks, window.write_offsets] = key
        self.pool.values[self.layer][window.write_blocks, window.write_offsets] = value
        keys, values = window.self_keys[self.layer], window.self_values[self.layer]
        keys[window.rows, :, window.write_positions] = key
        values[window.rows, :, window.write_positions] = value
        return keys, values


class PagedCrossLayer(PagedLayer):
    """Cross-attention: filled at join; T5 reads `.keys`/`.values` once it `is_updated`, here
    the window's gathered blocks. (No super().__init__: it would assign the two properties.)"""
    is_initialized = True

    def __init__(self, layer: int, pool: Pool, window: Window) -> None:
        self.layer, self.pool, self.window = layer, pool, window

    def update(self, key_states, value_states, *args, **kwargs):
        raise RuntimeError("cross-attention blocks are written at join, never by the step")

    @property
    def keys(self) -> torch.Tensor:
        return self.window.cross_keys[self.layer]

    @keys.setter
    def keys(self, value: torch.Tensor) -> None:
        raise AttributeError("a paged cross-attention layer's keys live in the pool")

    @property
    def values(self) -> torch.Tensor:
        return self.window.cross_values[self.layer]

    @values.setter
    def values(self, value: torch.Tensor) -> None:
        raise AttributeError("a paged cross-attention layer's values live in the pool")
