"""`make gpu-check`'s layout comparison: continuous batching's paged KV layout serves the same
tokens as the static layout on the GPU (#41: "tokens equal to the static layout's"), for the
first requests of the Azure conversation trace, each layout in an engine of its own, eager in
fp32 so that nothing but the layout differs. The suite checks the same on a CPU for any
arrival order (tests/probe/test_paged_kv.py)."""

from __future__ import annotations

import torch

from probe.contract.options import parse_opts
from probe.engine.continuous_scheduler import ContinuousScheduler
from probe.engine.engine import Engine, EngineSettings
from probe.engine.model.loading import LoadedModel
from probe.engine.model.requests import EngineRequest
from probe.engine.workload_setup import prepare_workload

LAYOUTS = ("static", "paged")


def layouts_agree(loaded: LoadedModel, device: torch.device, *, requests: int = 32,
                  slots: int = 8, max_new_tokens: int = 64) -> dict:
    """Each layout's tokens for the same requests; `equal` when every request has the same."""
    trace = prepare_workload("azure-conv").trace.requests[:requests]
    asked = [EngineRequest(f"l{i}", 700 + i, r.input_length,
                           min(r.output_length, max_new_tokens), 0.0)
             for i, r in enumerate(trace)]
    tokens: dict[str, dict[str, list[int] | None]] = {}
    failed: dict[str, int] = {}
    for layout in LAYOUTS:
        settings = EngineSettings(model=loaded.info.name, device=str(device),
                                  max_new_tokens=max_new_tokens, keep_tokens=True,
                                  max_batch=slots, drift_every=0)
        engine = Engine(settings, parse_opts(["batching=continuous", f"kv_layout={layout}"]),
                        loaded=loaded)
        try:
            records = ContinuousScheduler(engine).serve_all(asked)
        finally:
            engine.close()
        tokens[layout] = {r.id: None if r.tokens is None else list(r.tokens) for r in records}
        failed[layout] = sum(not r.ok for r in records)
    differ = [rid for rid, ids in tokens["static"].items() if tokens["paged"].get(rid) != ids]
    return {"requests": len(asked), "slots": slots, "failed": failed,
            "equal": not differ and not any(failed.values())
                     and len(tokens["static"]) == len(asked),
            "differ": differ[:5]}
