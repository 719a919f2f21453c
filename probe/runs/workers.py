"""What a Ray worker keeps between the tasks it serves, for bench and tune alike: the model,
loaded once, and the thread count a CPU run uses (torch's own default: a thread per core)."""

from __future__ import annotations

import functools


@functools.lru_cache(maxsize=1)
def loaded_model(name: str):
    """A worker serves many tasks of one study: it loads the model once, as a local run does."""
    from probe.engine.model.loading import load_model
    return load_model(name)


def physical_cores() -> int | None:
    import psutil
    return psutil.cpu_count(logical=False)
