"""A workload ready to serve: the trace fitted to the model, its bucket edges and the static
cache's length. A value of the contract (the dashboard sends it to the engine process as its
first message); probe/engine/workload_setup.py makes it from a trace name and the limits."""

from __future__ import annotations

from dataclasses import dataclass

from probe.contract.settings import EngineSettings
from workloads.fitting import FitReport
from workloads.trace_records import Trace


@dataclass(frozen=True)
class PreparedWorkload:
    trace: Trace
    fit: FitReport
    bucket_edges: tuple[int, ...]
    bucket_source: str          # "--buckets" or "planner (K=4)"
    max_new_tokens: int         # the longest output: the static cache's self-attention length

    def engine_settings(self, *, model: str, device: str, max_input: int,
                        **settings) -> EngineSettings:
        """The engine's settings for this workload: its bucket edges and cache length, with
        the caller's model, device and limits (the dashboard and `replay` both start here)."""
        return EngineSettings(model=model, device=device, bucket_edges=self.bucket_edges,
                              max_input_tokens=max_input, max_new_tokens=self.max_new_tokens,
                              **settings)
