"""Figures computed from raw records, in one place: percentiles, segments, windows.

Percentiles are numpy's (linear interpolation) on the exact values, never from histograms.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Sequence

import numpy as np

from probe.records import CompileEvent, GraphBreakRecord, RequestRecord


@dataclass(frozen=True)
class Summary:
    p50: float | None = None
    p95: float | None = None
    p99: float | None = None
    mean: float | None = None
    max: float | None = None

    def as_dict(self) -> dict[str, float | None]:
        return {"p50": self.p50, "p95": self.p95, "p99": self.p99, "mean": self.mean,
                "max": self.max}


def summarize(values: Iterable[float | None]) -> Summary:
    data = np.array([v for v in values if v is not None], dtype=float)
    if data.size == 0:
        return Summary()
    p50, p95, p99 = np.percentile(data, [50, 95, 99])
    return Summary(float(p50), float(p95), float(p99), float(data.mean()), float(data.max()))


def active_span_s(records: Sequence[RequestRecord]) -> float:
    """Seconds a config was serving: the sum over its runs of consecutive requests (by seq) of
    last end − first start, so a config toggled away and back is not charged for the gap."""
    span, run_start, run_end, last_seq = 0.0, None, None, None
    for record in sorted(records, key=lambda r: r.seq):
        if run_start is not None and record.seq != last_seq + 1:
            span += run_end - run_start
            run_start = None
        if run_start is None:
            run_start, run_end = record.start_s, record.end_s
        run_end = max(run_end, record.end_s)
        last_seq = record.seq
    if run_start is not None:
        span += run_end - run_start
    return span


@dataclass(frozen=True)
class SegmentStats:
    config_id: str
    requests: int
    failed: int
    latency_ms: Summary
    ttft_ms: Summary
    tpot_ms: Summary
    queue_ms: Summary
    throughput_rps: float | None
    tokens_per_s: float | None
    compiles: int
    recompiles: int
    compile_s: float
    graph_breaks: int
    graphs: int
    kv_cache_peak_bytes: int
    padding_waste: float | None   # (padded − real) / padded input tokens

    def as_dict(self) -> dict:
        return {
            "config_id": self.config_id, "requests": self.requests, "failed": self.failed,
            "latency_ms": self.latency_ms.as_dict(), "ttft_ms": self.ttft_ms.as_dict(),
            "tpot_ms": self.tpot_ms.as_dict(), "queue_ms": self.queue_ms.as_dict(),
            "throughput_rps": self.throughput_rps, "tokens_per_s": self.tokens_per_s,
            "compiles": self.compiles, "recompiles": self.recompiles,
            "compile_s": self.compile_s, "graph_breaks": self.graph_breaks,
            "graphs": self.graphs, "kv_cache_peak_bytes": self.kv_cache_peak_bytes,
            "padding_waste": self.padding_waste,
        }


def padding_waste(records: Sequence[RequestRecord]) -> float | None:
    padded = sum(r.padded_tokens for r in records)   # each record is one padded row
    real = sum(r.input_tokens for r in records)
    return None if padded == 0 else (padded - real) / padded


def segment_stats(config_id: str, records: Sequence[RequestRecord],
                  events: Sequence[CompileEvent],
                  breaks: Sequence[GraphBreakRecord]) -> SegmentStats:
    ok = [r for r in records if r.ok]
    span = active_span_s(records)
    compile_events = [e for e in events if e.kind in ("compile", "recompile")]
    return SegmentStats(
        config_id=config_id, requests=len(ok), failed=len(records) - len(ok),
        latency_ms=summarize(r.latency_ms for r in ok),
        ttft_ms=summarize(r.ttft_ms for r in ok),
        tpot_ms=summarize(r.tpot_ms for r in ok),
        queue_ms=summarize(r.queue_ms for r in ok),
        throughput_rps=len(ok) / span if span > 0 else None,
        tokens_per_s=sum(r.output_tokens for r in ok) / span if span > 0 else None,
        compiles=sum(e.kind == "compile" for e in compile_events),
        recompiles=sum(e.kind == "recompile" for e in compile_events),
        compile_s=sum(e.duration_s or 0.0 for e in compile_events),
        graph_breaks=sum(b.count for b in breaks),
        graphs=sum(e.graphs for e in compile_events),
        kv_cache_peak_bytes=max((r.kv_cache_bytes for r in records), default=0),
        padding_waste=padding_waste(ok),
    )


def segments(config_ids: Sequence[str], records: Sequence[RequestRecord],
             events: Sequence[CompileEvent],
             breaks: Sequence[GraphBreakRecord]) -> tuple[SegmentStats, ...]:
    """One SegmentStats per config, in the order the configs were first used."""
    return tuple(
        segment_stats(cid, [r for r in records if r.config_id == cid],
                      [e for e in events if e.config_id == cid],
                      [b for b in breaks if b.config_id == cid])
        for cid in config_ids)
