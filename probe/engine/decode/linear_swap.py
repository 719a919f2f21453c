"""Every nn.Linear of a model swapped in place for a module made from it: how each int8 path
(int8_dynamic, int8_weight_only) puts its linear into the model."""

from __future__ import annotations

from typing import Callable

import torch


def replace_linears(model: torch.nn.Module,
                    make: Callable[[torch.nn.Linear], torch.nn.Module]) -> int:
    """Every nn.Linear replaced by `make(linear)`; returns how many. A tied lm_head is replaced
    too (the embedding keeps its own copy: it is a lookup, not a matmul)."""
    count = 0
    for parent in list(model.modules()):
        for name, child in list(parent.named_children()):
            if isinstance(child, torch.nn.Linear):
                setattr(parent, name, make(child))
                count += 1
    return count
