"""The live view the engine publishes to the dashboard: one frozen, picklable value, swapped
whole a few times a second. Panels render only this, so each can be tested with a recorded one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from probe.contract.device_sample import DeviceSample
from probe.contract.figures import (
    NO_GOODPUT,
    Backlog,
    ConfigTpot,
    Goodput,
    SegmentStats,
    Summary,
    WarmStats,
)
from probe.contract.objective import Slo
from probe.contract.options import OptConfig
from probe.contract.records import (
    BatchSteps,
    BreakEven,
    CompileEvent,
    CompileInProgress,
    GraphBreakRecord,
    LedgerEntry,
    Notice,
    RequestRecord,
    RooflineStatus,
)
from probe.contract.session import ConfigEntry


@dataclass(frozen=True)
class KVStatus:
    now_bytes: int                  # held by the latest request (its cache lives only while it runs)
    now_used_bytes: int
    self_attention_bytes: int       # of the latest request
    cross_attention_bytes: int
    peak_bytes: int                 # over the session
    per_request_p95_bytes: int | None   # held per request at the window's p95
    free_device_bytes: int | None
    headroom_requests: int | None   # how many such requests fit in free device memory


@dataclass(frozen=True)
class ReplayStatus:
    trace: str
    running: bool
    paused: bool
    speed: float                    # the rate factor (workloads/thinning.py)
    dispatched: int
    completed: int
    failed: int
    total: int | None               # None when looping
    queue_depth: int
    offered_rps: float | None       # arrival rate over the window
    capacity_rps: float | None      # what the engine can serve: 1 / mean service time (window)
    overloaded: bool                # offered load exceeds what the engine serves


@dataclass(frozen=True)
class BatchStatus:
    mode: str = "off"                       # the batching option being served
    max_batch: int = 1                      # rows per batch (dynamic) or slots (continuous)
    occupancy_mean: float | None = None     # mean rows decoded together, over the window
    occupancy_recent: tuple[float, ...] = ()  # per request, oldest first (for a sparkline)
    padding_waste: float | None = None      # padded input tokens that were padding, window
    steps: BatchSteps | None = None         # continuous: its recent steps (host against GPU)


@dataclass(frozen=True)
class WindowStats:
    requests: int
    latency_ms: Summary
    ttft_ms: Summary
    tpot_ms: Summary
    throughput_rps: float | None
    tokens_per_s: float | None
    warm: WarmStats | None = None           # the same over its warm requests (steady_state)
    backlog_dominated: bool = False         # its figures over all read a compile's backlog
    goodput: Goodput = NO_GOODPUT       # under the session's SLO (none set: all None)
    # seconds since the window's last request ended, once above IDLE_S: the rates above are
    # then over the span up to now (they decay while nothing is served)
    idle_s: float | None = None


@dataclass(frozen=True)
class LiveView:
    t_s: float                                  # session clock when built
    model: str
    device: str
    options: OptConfig                          # what the engine serves now
    config_id: str
    configs: tuple[ConfigEntry, ...]
    segments: tuple[SegmentStats, ...]
    window: WindowStats
    recent: tuple[RequestRecord, ...]           # newest last
    compile_events: tuple[CompileEvent, ...]    # newest last
    compiling_since_s: float | None             # a compile is running since then
    compiling_request: str | None
    graph_breaks: tuple[GraphBreakRecord, ...]
    device_sample: DeviceSample | None
    kv: KVStatus
    replay: ReplayStatus
    notices: tuple[Notice, ...] = ()
    read_only: bool = False                     # a loaded snapshot, not a live engine
    bucket_edges: tuple[int, ...] = field(default=())
    batch: BatchStatus = field(default_factory=BatchStatus)
    compiling: CompileInProgress | None = None  # the compile running now, before its event
    requested_options: OptConfig | None = None  # the options the engine last received
    options_pending: bool = False               # received, not applied yet
    roofline: RooflineStatus | None = None      # this machine's limit for the served config
    break_even: BreakEven | None = None         # requests that repay the served config's compile
    # the doctor on the window's requests of the served config (diagnosis.SegmentDiagnosis),
    # and the readiness checklist (checklist.ChecklistItem, …)
    diagnosis: Any = None
    checklist: tuple = ()
    backlog: Backlog | None = None              # the queue a compile left, while it drains
    slo: Slo | None = None                      # the session's SLO (--slo), if any
    tpot: ConfigTpot | None = None              # the served config's TPOT and roofline ratio
    ledger: str | None = None                   # its compiled graphs' pay-back, in one line
    compile_ledger: tuple[LedgerEntry, ...] = ()    # the session's whole ledger (the `e` screen)

    @property
    def compiles(self) -> int:
        return sum(s.compiles for s in self.segments)

    @property
    def recompiles(self) -> int:
        return sum(s.recompiles for s in self.segments)


