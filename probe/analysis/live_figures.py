"""The one place a LiveView (probe/contract/live.py) is computed from a session's raw records:
the window, the KV and batching status, the doctor on the window, the served config's TPOT."""

from __future__ import annotations

from probe.analysis import steady_state
from probe.analysis.break_even_live import break_even_status
from probe.analysis.compile_ledger import ledger_summary
from probe.analysis.doctor_live import live_doctor, overload_finding
from probe.analysis.findings import kv_fit
from probe.analysis.load_figures import live_load
from probe.analysis.slo import goodput
from probe.analysis.stats import (
    padding_waste,
    session_segments,
    summarize,
    throughput_rps,
    tokens_per_s,
)
from probe.analysis.steady_state import ColdChain, cold_chain, warm_stats
from probe.analysis.tpot_figure import config_tpot
from probe.contract.device_sample import DeviceSample
from probe.contract.figures import Backlog
from probe.contract.live import BatchStatus, KVStatus, LiveView, ReplayStatus, WindowStats
from probe.contract.objective import Slo
from probe.contract.options import OptConfig
from probe.contract.records import BatchSteps, CompileInProgress, RequestRecord, RooflineStatus
from probe.contract.session import SessionData

RECENT_REQUESTS = 400
WINDOW_SIZE = 200               # requests in the sliding window
RECENT_EVENTS = 200
OFFERED_WINDOW_S = 30.0


def offered_rps(arrivals_s, now_s: float) -> float | None:
    """Arrivals per second over the last OFFERED_WINDOW_S seconds before `now_s`."""
    recent = [t for t in arrivals_s if now_s - OFFERED_WINDOW_S <= t <= now_s]
    if len(recent) < 2:
        return None
    return len(recent) / max(now_s - min(recent), 1e-9)


def overloaded(offered: float | None, capacity: float | None, queue_depth: int) -> bool:
    """Offered load above what the engine serves (5% slack), with a queue to show for it."""
    return bool(offered and capacity and offered > capacity * 1.05 and queue_depth > 2)


capacity_rps = steady_state.capacity_rps     # the one definition: warm service times


IDLE_S = 10.0       # nothing served for this long: the window's rates decay to now


def decayed_rate(rate: float | None, records: tuple[RequestRecord, ...],
                 now_s: float | None) -> tuple[float | None, float | None]:
    """(the rate, the seconds nothing was served): past IDLE_S since the last end, `rate` (over
    first start → last end, stats.throughput_rps's span) is rescaled to first start → now."""
    if rate is None or now_s is None or not records:
        return rate, None
    first = min(r.start_s for r in records)
    last = max(r.end_s for r in records)
    idle = now_s - last
    if idle < IDLE_S or last <= first:
        return rate, None
    return rate * (last - first) / (now_s - first), idle


def window_stats(records: tuple[RequestRecord, ...], chain: ColdChain | None = None,
                 backlog: Backlog | None = None, *, slo: Slo | None = None,
                 now_s: float | None = None) -> WindowStats:
    """`now_s`: the session clock now (live): the rates decay while nothing is served."""
    ok = [r for r in records if r.ok]
    warm = None if chain is None else warm_stats(records, chain)
    served_rps, idle = decayed_rate(throughput_rps(records), records, now_s)
    tokens_rps, _ = decayed_rate(tokens_per_s(records), records, now_s)
    return WindowStats(
        requests=len(ok), latency_ms=summarize(r.latency_ms for r in ok),
        ttft_ms=summarize(r.ttft_ms for r in ok), tpot_ms=summarize(r.tpot_ms for r in ok),
        throughput_rps=served_rps, tokens_per_s=tokens_rps, idle_s=idle,
        warm=warm, backlog_dominated=(warm is not None
                                      and steady_state.backlog_dominated(warm, backlog)),
        goodput=goodput(records, slo))


def kv_status(records: tuple[RequestRecord, ...], window: tuple[RequestRecord, ...],
              free_bytes: int | None) -> KVStatus:
    latest = records[-1] if records else None
    per_request = summarize(r.kv_cache_bytes for r in window if r.ok).p95
    fit = kv_fit(window, free_bytes)
    return KVStatus(
        now_bytes=latest.kv_cache_bytes if latest else 0,
        now_used_bytes=latest.kv_cache_used_bytes if latest else 0,
        self_attention_bytes=latest.kv_self_attention_bytes if latest else 0,
        cross_attention_bytes=latest.kv_cross_attention_bytes if latest else 0,
        peak_bytes=max((r.kv_cache_bytes for r in records), default=0),
        per_request_p95_bytes=None if per_request is None else int(per_request),
        free_device_bytes=free_bytes, headroom_requests=None if fit is None else fit[1])


def batch_status(mode: str, max_batch: int, window: tuple[RequestRecord, ...],
                 steps: BatchSteps | None = None) -> BatchStatus:
    ok = [r for r in window if r.ok]
    return BatchStatus(steps=steps if mode == "continuous" else None,
        mode=mode, max_batch=max_batch if mode != "off" else 1,
        occupancy_mean=summarize(r.batch_size for r in ok).mean,
        occupancy_recent=tuple(r.batch_size for r in ok[-60:]),
        padding_waste=padding_waste(ok))


def build_live(data: SessionData, *, t_s: float, model: str, device: str, options: OptConfig,
               config_id: str, window_start_seq: int, compiling_since_s: float | None,
               compiling_request: str | None, device_sample: DeviceSample | None,
               replay: ReplayStatus, bucket_edges: tuple[int, ...] = (),
               window_size: int = WINDOW_SIZE, read_only: bool = False,
               max_batch: int = 1, compiling: CompileInProgress | None = None,
               roofline: RooflineStatus | None = None,
               requested_options: OptConfig | None = None,
               options_pending: bool = False, saved: str | None = None) -> LiveView:
    """The one place a LiveView is computed from raw session data. `saved`: the file a
    loaded session was read from (the checklist's "results documented")."""
    records = data.records
    window = tuple(r for r in records if r.seq >= window_start_seq)[-window_size:]
    free = device_sample.mem_free_bytes if device_sample else None
    kv = kv_status(records, window, free)
    chain = cold_chain(records, data.events)
    draining = steady_state.backlog(records, chain, replay.queue_depth, replay.offered_rps,
                                    replay.capacity_rps, compiling, config_id)
    segments = session_segments(data)
    diagnosis, checklist = live_doctor(
        data, config_id, window, segments, bucket_edges=bucket_edges, max_batch=max_batch,
        device_sample=device_sample, roofline=roofline, saved=saved,
        load=None if read_only else live_load(replay.offered_rps, replay.capacity_rps),
        overloaded=overload_finding(replay.offered_rps, replay.capacity_rps, replay.queue_depth,
                                    replay.overloaded))
    return LiveView(
        t_s=t_s, model=model, device=device, options=options, config_id=config_id,
        configs=tuple(data.configs.values()), segments=segments,
        window=window_stats(window, chain, draining, slo=data.slo,
                            now_s=None if read_only else t_s), slo=data.slo,
        recent=records[-RECENT_REQUESTS:],
        compile_events=data.events[-RECENT_EVENTS:], compiling_since_s=compiling_since_s,
        compiling_request=compiling_request, graph_breaks=data.breaks,
        device_sample=device_sample, kv=kv, replay=replay,
        notices=data.notices[-20:], read_only=read_only, bucket_edges=bucket_edges,
        batch=batch_status(options.batching, max_batch, window,
                           data.batch_steps.get(config_id)), compiling=compiling,
        roofline=roofline, break_even=break_even_status(data, options, config_id),
        requested_options=requested_options, options_pending=options_pending,
        diagnosis=diagnosis, checklist=checklist, backlog=draining,
        tpot=config_tpot(records, data.events, config_id, roofline, chain),
        ledger=ledger_summary(data.compile_ledger, config_id), compile_ledger=data.compile_ledger)
