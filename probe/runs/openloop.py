"""Open-loop replays for the experiments that only show under queueing (E7, E8): requests
arrive at their trace times, scaled to an offered rate set from this machine's own
one-at-a-time capacity, and wait."""

from __future__ import annotations

import threading
from dataclasses import asdict, dataclass, field
from typing import Callable

from probe.analysis.stats import summarize, throughput_rps, tokens_per_s
from probe.contract.figures import Summary
from probe.contract.options import OptConfig
from probe.contract.records import RequestRecord
from probe.contract.session import SessionData
from probe.engine.workload_setup import prepare_workload
from probe.runs.device_busy import DeviceBusy
from probe.runs.plan import Plan
from probe.runs.runs import RunContext, make_engine

KEEPS_UP = 0.9                           # served ≥ 90% of the offered rate
MAX_BATCH = 8                            # dynamic: rows per batch; continuous: slots


@dataclass
class OpenLoopStudy:
    """What an open-loop experiment gets; traces and capacities are loaded and measured once
    for every experiment that replays them."""
    context: RunContext
    plan: Plan
    environment: dict
    message: Callable[[str], None] = lambda text: None
    # each experiment's runs as they finish (`finished[name][key]`: the run's as_dict()), so
    # that a signal in its next run keeps them in the report
    finished: dict[str, dict[str, dict]] = field(default_factory=dict)
    _workloads: dict = field(default_factory=dict)
    _capacities: dict = field(default_factory=dict)

    def workload(self, trace: str):
        if trace not in self._workloads:
            self._workloads[trace] = prepare_workload(trace)
        return self._workloads[trace]

    def keep(self, experiment: str, key: str, run: dict) -> None:
        self.finished.setdefault(experiment, {})[key] = run

    def capacity_rps(self, trace: str) -> float:
        """One-at-a-time capacity of the trace's first requests (trace_capacity_rps)."""
        if trace not in self._capacities:
            self._capacities[trace] = trace_capacity_rps(
                self.context, self.workload(trace), max(4, len(self.plan.requests) // 4))
        return self._capacities[trace]


def trace_capacity_rps(context: RunContext, workload, count: int) -> float:
    """The capacity (the one definition: 1 ÷ mean service time) of the trace's first `count`
    requests, each served alone by a fresh fullgraph engine after the first as a warm-up:
    the dashboard's calibration's measurement (probe/engine/calibration.py), on the trace's
    requests instead of its opening's mean shape."""
    from probe.engine.calibration import rehearsed_capacity_rps
    from probe.engine.model.requests import EngineRequest
    engine = make_engine(context, OptConfig(decode="fullgraph"),
                         bucket_edges=workload.bucket_edges,
                         max_new_tokens=workload.max_new_tokens, max_batch=MAX_BATCH)
    try:
        requests = [EngineRequest(r.id or f"c{i}", i, r.input_length, r.output_length,
                                  engine.clock.now_s())
                    for i, r in enumerate(workload.trace.requests[:count])]
        capacity = rehearsed_capacity_rps(engine, requests)
    finally:
        engine.close()
    if not capacity:
        raise RuntimeError("the one-at-a-time capacity could not be measured (every request "
                           "compiled)")
    return capacity


def replay(context: RunContext, options: OptConfig, workload, *, rate: float, requests: int,
           **settings) -> tuple[SessionData, float | None]:
    """Serve `requests` of the workload arriving at `rate` through the serving loop; the
    session it leaves (records, segments), and how busy the device was (device_busy.py)."""
    engine = make_engine(context, options, bucket_edges=workload.bucket_edges,
                         max_new_tokens=workload.max_new_tokens, max_batch=MAX_BATCH, **settings)
    return _served(engine, workload, rate=rate, max_requests=requests)


def full_load(context: RunContext, options: OptConfig, workload, *, slots: int,
              requests: int) -> tuple[SessionData, float | None]:
    """`requests` of the workload with twice `slots` outstanding (a closed loop: a slot is
    never free for want of a request), at `slots` slots (0: sized from the device's memory);
    the session, and how busy the device was over it (device_busy.py)."""
    engine = make_engine(context, options, bucket_edges=workload.bucket_edges,
                         max_new_tokens=workload.max_new_tokens, max_batch=slots)
    outstanding = 2 * engine.settings.max_batch         # the slots, sized where 0
    return _served(engine, workload, concurrency=outstanding, max_requests=requests)


def _served(engine, workload, **replay) -> tuple[SessionData, float | None]:
    """The workload through headless.replay_loop, the device sampled; the engine closed."""
    from probe.engine.process.headless import replay_loop
    try:
        with DeviceBusy(engine.device) as busy:
            replay_loop(engine, workload, **replay).run(threading.Event())
    finally:
        engine.close()
    return engine.session.freeze(), busy.mean_pct


def peak_concurrent_kv_bytes(records: list[RequestRecord]) -> int:
    """The most KV-cache bytes held at one instant: a sweep over the requests' service
    intervals (a request holds its cache from start to end)."""
    edges = sorted([(r.start_s, r.kv_cache_bytes) for r in records]
                   + [(r.end_s, -r.kv_cache_bytes) for r in records],
                   key=lambda edge: (edge[0], edge[1]))   # frees before takes at one instant
    held = peak = 0
    for _, delta in edges:
        held += delta
        peak = max(peak, held)
    return peak


@dataclass(frozen=True)
class OpenLoopFigures:
    """One open-loop replay at one offered rate."""
    offered_rps: float
    served_rps: float | None
    requests: int
    failed: int
    tokens_per_s: float | None
    latency_ms: Summary
    occupancy_mean: float | None       # rows decoded together, mean over the requests
    concurrency_peak: float | None     # the most rows any request was decoded with
    kv_peak_bytes: int
    keeps_up: bool
    device_busy_pct: float | None = None    # device_busy.py's mean over the run

    def as_dict(self) -> dict:
        return asdict(self)


def open_loop_figures(records: list[RequestRecord], offered_rps: float,
                      device_busy_pct: float | None = None) -> OpenLoopFigures:
    ok = [r for r in records if r.ok]
    served = throughput_rps(records)
    occupancy = summarize(r.batch_size for r in ok)
    return OpenLoopFigures(
        offered_rps=offered_rps, served_rps=served, requests=len(ok),
        failed=len(records) - len(ok), tokens_per_s=tokens_per_s(records),
        latency_ms=summarize(r.latency_ms for r in ok), occupancy_mean=occupancy.mean,
        concurrency_peak=occupancy.max, kv_peak_bytes=peak_concurrent_kv_bytes(ok),
        # a run that lost requests kept up with nothing: its rate is not comparable
        keeps_up=bool(served and served >= KEEPS_UP * offered_rps and len(ok) == len(records)),
        device_busy_pct=device_busy_pct)
