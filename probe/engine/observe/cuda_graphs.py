"""The CUDA graphs a process holds: the graphs inductor's CUDA-graph trees recorded
(compile=reduce-overhead) and the bytes of their shared memory pool, read from the tree manager
PyTorch keeps per device (torch._inductor.cudagraph_trees; no public API counts them)."""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class GraphCensus:
    graphs: int                 # recorded CUDA graphs (tree nodes)
    pool_bytes: int | None      # the bytes the trees' memory pool holds; None: unreadable


def tree_census(device: torch.device) -> GraphCensus | None:
    """None on a CPU, or before any CUDA-graph tree exists."""
    if device.type != "cuda":
        return None
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
    return GraphCensus(graphs, pool_bytes(getattr(manager, "cuda_graphs_thread_pool", None)))


def pool_bytes(pool: tuple[int, int] | None) -> int | None:
    """Bytes of the allocator's segments that belong to a graph memory pool."""
    if pool is None:
        return None
    try:
        segments = torch.cuda.memory_snapshot()
    except Exception:
        return None
    return sum(int(s.get("total_size", 0)) for s in segments
               if tuple(s.get("segment_pool_id", ())) == tuple(pool))
