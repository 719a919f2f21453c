"""Wall-clock marks that are true for GPU work: synchronise the device before reading the clock."""

from __future__ import annotations

import time

import torch


def mark(device: torch.device) -> float:
    """perf_counter() after all queued work on `device` finished."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    return time.perf_counter()
