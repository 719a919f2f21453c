"""The CUDA graphs a process holds and the bytes their memory pools hold: the graphs
inductor's CUDA-graph trees recorded (compile=reduce-overhead), read from the tree manager
PyTorch keeps per device (torch._inductor.cudagraph_trees; no public API counts them), and the
graphs infertop captures itself (continuous batching's, slot_graphs.py), registered here."""

from __future__ import annotations

import threading
from dataclasses import dataclass

import torch

_lock = threading.Lock()
_own: dict[int, tuple[tuple[int, int], int]] = {}     # id → (pool, graphs) of our captures


@dataclass(frozen=True)
class GraphCensus:
    graphs: int                 # captured CUDA graphs
    pool_bytes: int | None      # the bytes their memory pools hold; None: unreadable


def register(owner: object, pool: tuple[int, int], graphs: int) -> None:
    """Graphs captured outside inductor, counted until `forget(owner)`."""
    with _lock:
        _own[id(owner)] = (pool, graphs)


def forget(owner: object) -> None:
    with _lock:
        _own.pop(id(owner), None)


def census(device: torch.device) -> GraphCensus | None:
    """None on a CPU, or where no CUDA graph exists."""
    if device.type != "cuda":
        return None
    with _lock:
        parts = list(_own.values())
    trees = _trees(device)
    if trees is not None:
        parts.append(trees)
    if not parts:
        return None
    sizes = [pool_bytes(pool) for pool, _ in parts]
    return GraphCensus(sum(graphs for _, graphs in parts),
                       None if any(s is None for s in sizes) else sum(s or 0 for s in sizes))


def _trees(device: torch.device) -> tuple[tuple[int, int], int] | None:
    try:
        from torch._inductor.cudagraph_trees import get_manager
        manager = get_manager(device.index if device.index is not None
                              else torch.cuda.current_device(), create_if_none_exists=False)
    except Exception:       # a torch whose internals moved: no census, never a crash
        return None
    if manager is None:
        return None
    graphs, stack = 0, list(manager.get_roots())
    while stack:
        node = stack.pop()
        graphs += 1
        for children in node.children.values():
            stack.extend(children)
    return manager.cuda_graphs_thread_pool, graphs


def pool_bytes(pool: tuple[int, int]) -> int | None:
    """Bytes of the allocator's segments in one graph memory pool."""
    try:
        segments = torch.cuda.memory_snapshot(mempool_id=pool, include_traces=False)
    except Exception:
        return None
    return sum(int(s.get("total_size", 0)) for s in segments
               if tuple(s.get("segment_pool_id", pool)) == tuple(pool))
