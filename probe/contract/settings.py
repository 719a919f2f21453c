"""The engine's fixed settings for a session (what --opt does not change): a plain value that
crosses into the engine process, importable without torch."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class EngineSettings:
    model: str = "t5-small"
    device: str = "auto"
    bucket_edges: tuple[int, ...] = ()
    max_input_tokens: int = 512
    max_new_tokens: int = 512          # static KV cache positions for self-attention
    compile_backend: str = "inductor"  # tests may use "eager" to exercise dynamo alone
    keep_tokens: bool = False          # keep every request's generated ids (--tokens)
    drift_every: int = 8               # keep tokens of 1 request in N (by seq) and compare them
                                       # with the fp32 eager reference; 0: no drift sampling
    threads: int | None = None         # torch intra-op threads; None keeps torch's default
    # dynamic: rows per batch; continuous: slots. 0: sized by the engine from the device's free
    # memory and the trace's lengths (probe/engine/decode/slot_sizing.py), --max-batch overrides
    max_batch: int = 0
    batch_window_ms: float = 50.0      # dynamic: how long the first request waits for company
    kv_block_tokens: int = 16          # paged KV: positions per block
    # --kv-budget: the bytes slots are sized against, and the paged pool's; None = what the
    # static layout gives max_batch slots, so the
    # two layouts are compared at the same budget
    kv_budget_bytes: int | None = None
    paged_slots_factor: int = 2        # paged KV: slots = factor × max_batch (the pool decides
                                       # how many of them can hold a request at once)
