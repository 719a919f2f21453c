"""The doctor's machine-level findings: what the session says about the machine and the load,
beside the tail's causes. Each is a name and one sentence of evidence with its numbers."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from probe.analysis.attribution import failures
from probe.analysis.load_check import CONTENTION_CORES
from probe.analysis.load_figures import Load, arrivals_rps, records_load
from probe.analysis.stats import summarize
from probe.analysis.steady_state import warm_service_s
from probe.common.units import fmt_bytes, fmt_clock, fmt_fraction, fmt_ms
from probe.contract.device_sample import DeviceSample
from probe.contract.figures import EnergyStats, SegmentStats
from probe.contract.records import BatchSteps, CompileEvent, KVPool, RequestRecord

DRIFT_TOLERANCE = 0.99          # token agreement with the fp32 eager reference
SATURATION = 1.0                # offered / capacity at or above this: saturated
QUEUE_GROWTH = 2.0              # the last third's mean queue wait over the first third's …
QUEUE_GROWTH_MIN_MS = 100.0     # … and at least this much longer
QUEUE_FORMED = 1.0              # a request waited at least this many median service times
CONTENTION_BUSY = 0.8           # a machine this busy, CONTENTION_CORES of it others'
MEMORY_FREE_MIN = 0.1           # of the machine's memory
ENERGY_PADDING = 0.10           # of the requests' joules spent on padded encoder positions


@dataclass(frozen=True)
class Finding:
    finding: str        # saturation | cpu_contention | memory_pressure | drift |
                        # recompile_limit | failed | prediction | host_bound |
                        # energy_padding
    evidence: str

    def as_dict(self) -> dict:
        return {"finding": self.finding, "evidence": self.evidence}


offered_rps = arrivals_rps      # the one definition (load_figures)


def peak_concurrency(records: Sequence[RequestRecord]) -> int:
    """The most requests in the system (arrived, not yet ended) at one time."""
    edges = sorted([(r.arrival_s, 1) for r in records] + [(r.end_s, -1) for r in records],
                   key=lambda e: (e[0], e[1]))
    peak = now = 0
    for _, step in edges:
        now += step
        peak = max(peak, now)
    return peak


def queue_growth(records: Sequence[RequestRecord]) -> tuple[float, float] | None:
    """Mean queue wait of the first and the last third of the served requests (arrival order)."""
    ok = sorted((r for r in records if r.ok), key=lambda r: r.arrival_s)
    third = len(ok) // 3
    if third < 2:
        return None
    return (summarize(r.queue_ms for r in ok[:third]).mean or 0.0,
            summarize(r.queue_ms for r in ok[-third:]).mean or 0.0)


def queue_formed(records: Sequence[RequestRecord]) -> bool:
    """Some served request waited in the queue at least QUEUE_FORMED median service times."""
    service_ms = summarize(1000 * s for s in warm_service_s(records)).p50
    waits = [r.queue_ms for r in records if r.ok]
    return bool(waits and service_ms and max(waits) >= QUEUE_FORMED * service_ms)


def saturation(records: Sequence[RequestRecord], load: Load | None = None) -> Finding | None:
    """`load`: the figures to judge by (the live view's, which count the queued requests too);
    None: the set's own (load_figures.records_load)."""
    if load is None:
        load = records_load(records, _scope(records))
    growth = queue_growth(records)
    share = load.share
    # Arrivals at or above capacity saturate only once a queue forms: a closed loop (each
    # request sent as one ends) arrives at exactly the rate it is served, share ≈ 1 either
    # side of the line by noise alone, and nothing ever waits.
    over = bool(share is not None and share >= SATURATION and queue_formed(records))
    growing = bool(growth and growth[1] >= QUEUE_GROWTH * growth[0]
                   and growth[1] - growth[0] >= QUEUE_GROWTH_MIN_MS)
    if not (over or growing):
        return None
    parts = []
    if share is not None:
        parts.append(load.text())
    if growing and growth:
        parts.append(f"the queue grew from {fmt_ms(growth[0])} to {fmt_ms(growth[1])} "
                     f"(first to last third)")
    return Finding("saturation", "; ".join(parts))


def _scope(records: Sequence[RequestRecord]) -> str:
    configs = sorted({r.config_id for r in records})
    return f"{configs[0]}'s arrivals" if len(configs) == 1 else "these requests' arrivals"


def cpu_contention(sample: DeviceSample | None, cpu_count: int | None) -> Finding | None:
    """The machine busy beyond the engine's share (CPU serving: one reading, at save time)."""
    if (sample is None or sample.kind != "CPU" or not cpu_count or sample.util_pct is None
            or sample.process_cpu_pct is None):
        return None
    machine = sample.util_pct / 100 * cpu_count
    engine = sample.process_cpu_pct / 100
    others = machine - engine
    if others < CONTENTION_CORES or machine < CONTENTION_BUSY * cpu_count:
        return None
    return Finding("cpu_contention",
                   f"the machine was {sample.util_pct:.0f}% busy ({machine:.1f} of {cpu_count} "
                   f"cores), the engine {engine:.1f} cores: {others:.1f} cores went to other "
                   f"processes")


def kv_fit(records: Sequence[RequestRecord], free_bytes: int | None
           ) -> tuple[float, int] | None:
    """One request's KV cache (the served ones' p95) and how many such caches `free_bytes`
    holds; None without a memory reading or a served request. The one headroom: the live
    panel's (over its window), the doctor's and the checklist's (over the session)."""
    per_request = summarize(r.kv_cache_bytes for r in records if r.ok).p95
    if free_bytes is None or not per_request:
        return None
    return per_request, int(free_bytes // per_request)


def kv_headroom(records: Sequence[RequestRecord], sample: DeviceSample | None
                ) -> tuple[int, int, float] | None:
    """(free bytes, how many requests' KV caches they hold, one request's): `kv_fit` on the
    machine's sample."""
    free = None if sample is None else sample.mem_free_bytes
    fit = kv_fit(records, free)
    return None if fit is None or free is None else (free, fit[1], fit[0])


def memory_pressure(records: Sequence[RequestRecord], sample: DeviceSample | None,
                    pool: KVPool | None) -> Finding | None:
    """KV headroom below the concurrency the load reached, a full paged pool, or little free
    memory left on the machine."""
    parts = []
    concurrency = peak_concurrency(records)
    headroom = kv_headroom(records, sample)
    if headroom is not None and headroom[1] < concurrency:
        free, holds, per_request = headroom
        parts.append(f"free memory {fmt_bytes(free)} holds {holds} requests' KV cache "
                     f"({fmt_bytes(per_request)} each, p95), fewer than the {concurrency} in "
                     f"the system at once")
    if (sample is not None and sample.mem_total_bytes and sample.mem_free_bytes is not None
            and sample.mem_free_bytes < MEMORY_FREE_MIN * sample.mem_total_bytes):
        parts.append(f"{fmt_fraction(sample.mem_free_bytes / sample.mem_total_bytes)} of "
                     f"{fmt_bytes(sample.mem_total_bytes)} free")
    if pool is not None and pool.blocks_total and pool.blocks_peak >= pool.blocks_total:
        parts.append(f"the KV pool was full ({pool.blocks_peak} of {pool.blocks_total} blocks "
                     f"of {pool.block_tokens} tokens held at once)")
    return Finding("memory_pressure", "; ".join(parts)) if parts else None


def drift(segment: SegmentStats) -> Finding | None:
    d = segment.drift
    if d is None or d.token_agreement >= DRIFT_TOLERANCE:
        return None
    return Finding("drift", f"tokens agree {fmt_fraction(d.token_agreement)} with the fp32 eager "
                            f"reference over {d.sampled_requests} sampled requests (tolerance "
                            f"{fmt_fraction(DRIFT_TOLERANCE)}), {fmt_fraction(d.exact_match)} "
                            f"exact")


def recompile_limit(events: Sequence[CompileEvent]) -> Finding | None:
    limits = [e for e in events if e.kind == "limit"]
    if not limits:
        return None
    functions = ", ".join(sorted({e.function for e in limits}))
    return Finding("recompile_limit",
                   f"dynamo hit its recompile limit {len(limits)}× ({functions}) from "
                   f"{fmt_clock(limits[0].start_s)}: new shapes of it run eager since, silently"
                   + (f" ({limits[0].reason})" if limits[0].reason else ""))


def host_bound(steps: BatchSteps | None) -> Finding | None:
    """Continuous batching whose host work fills the step: the GPU waits on Python, and a
    faster GPU would not help. Where the steps' own launches lead, CUDA graphs per batch size
    (compile=reduce-overhead) take them off the host; where the joins lead, each runs the
    encoder eagerly for its group of joiners, which no option captures yet."""
    if steps is None or steps.bound != "host":
        return None
    if steps.joins_lead:
        fix = ("; most of it is joins: each runs the encoder eagerly for its group of "
               "joiners, a few hundred kernel launches")
    elif not steps.captured:
        fix = "; compile=reduce-overhead captures a CUDA graph per batch size"
    else:
        fix = ""
    return Finding("host_bound", f"the batching loop is host-bound: {steps.text()}{fix}")


def failed(records: Sequence[RequestRecord]) -> Finding | None:
    f = failures(records)
    return Finding("failed", f"{f.requests} failed: {f.text()}") if f.requests else None


def energy_padding(energy: EnergyStats | None) -> Finding | None:
    """Padding's share of the requests' joules (energy_stats's padding_share: the encoder's
    joules on padded positions) at or above ENERGY_PADDING; nothing where not measured."""
    if (energy is None or energy.unavailable is not None or energy.padding_share is None
            or energy.joules is None or energy.padding_share < ENERGY_PADDING):
        return None
    requests_j = energy.joules - (energy.idle_joules or 0.0)
    return Finding("energy_padding",
                   f"padding cost {fmt_fraction(energy.padding_share)} of the energy "
                   f"({energy.padding_share * requests_j:.3g} J of the requests' "
                   f"{requests_j:.3g} J, idle floor apart): encoder positions run on pads")
