"""What the dashboard hands the engine process when it starts it: its own module, read by both
sides (engine_process, which starts the process, and engine_child, which runs in it), so
neither side imports the other for it."""

from __future__ import annotations

from dataclasses import dataclass

from probe.contract.objective import Slo
from probe.contract.options import OptConfig
from probe.contract.protocol import EngineExit
from probe.contract.settings import EngineSettings
from probe.engine.workload_setup import PreparedWorkload


@dataclass(frozen=True)
class EngineLaunch:
    settings: EngineSettings
    options: OptConfig
    workload: PreparedWorkload | None   # None in the spawn arguments: it follows over the pipe
    trace_name: str
    speed: float | None = None      # None: measure the capacity and offer half of it
    max_requests: int | None = None
    loop: bool = True
    log_path: str = ""      # created by EngineClient.start, one per start; "": output discarded
    metrics_port: int | None = None     # serve Prometheus metrics from the engine process
    journal_path: str = ""  # created by EngineClient, one per session; "": not journaled
    predecessor: EngineExit | None = None   # a restart: how the engine it replaces ended
    torch_trace_dir: str = ""   # keep a TORCH_TRACE of the session here, for tlparse
    slo: Slo | None = None      # --slo: what the session's goodput is measured against
    warm_side: bool = False     # a warm switch's side engine (probe/engine/process/warm_side.py)
