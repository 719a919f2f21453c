"""Steady state apart from the compile transient: which requests are *warm*, the figures over
them, the capacity and the backlog a compile leaves. One definition, used by the live window,
the segments (session JSON), `snapshot show` and the dashboard.

A request is **cold** when it waited on a compile, directly or through the queue:
  - its own service included a compile stall (compile_stall_ms > 0), or
  - a compile ran while it sat in the queue (a compile event overlaps [arrival_s, start_s]:
    prewarm compiles between requests, which stall nobody's service; a warm switch's side
    compile, in another engine, is no such compile), or
  - it arrived while a cold request that arrived before it had not ended yet: it queued
    behind the backlog a compile left. The chain ends with the first request that arrives
    after every cold request ahead of it has ended — the backlog has drained.
Every other request is **warm**. (Under batching a request that joins a batch beside a cold one
counts as cold too: conservative, it shared that request's steps.)

**Capacity** is one over the mean service time (end − start, a batch's time shared by its rows)
of the requests whose own service waited on no compile (compile_stall_ms == 0): a backlog
lengthens queue waits, not service, so the requests that drain a backlog measure the capacity
that drains it.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from typing import Iterable, Sequence

from probe.analysis.summary import summarize
from probe.contract.figures import Backlog, WarmStats
from probe.contract.records import WAITED_ON, CompileEvent, CompileInProgress, RequestRecord

RecordKey = tuple[int, str]


def record_key(record: RequestRecord) -> RecordKey:
    return record.seq, record.id


@dataclass(frozen=True)
class ColdChain:
    """The cold requests of a set, and for each the config whose compile started its chain."""
    cold: frozenset[RecordKey]
    source: dict[RecordKey, str]         # cold request → the config that compiled

    def is_warm(self, record: RequestRecord) -> bool:
        return record_key(record) not in self.cold


def _compile_intervals(events: Iterable[CompileEvent]) -> tuple[list[float], list[float],
                                                                 list[str | None]]:
    spans = sorted((e.start_s, e.start_s + (e.duration_s or 0.0), e.config_id)
                   for e in events if e.kind in WAITED_ON and e.duration_s and not e.beside)
    return [s for s, _, _ in spans], [e for _, e, _ in spans], [c for _, _, c in spans]


def _compile_during(starts: list[float], ends: list[float], configs: list[str | None],
                    since_s: float, until_s: float) -> tuple[bool, str | None]:
    """(whether a compile overlaps [since_s, until_s], the config it compiled for)."""
    # compiles that started before until_s; any of them that ended after since_s overlaps
    last = bisect.bisect_left(starts, until_s)
    for index in range(last - 1, -1, -1):
        if ends[index] > since_s:
            return True, configs[index]
        if starts[index] + _LONGEST_COMPILE_S < since_s:
            break
    return False, None


_LONGEST_COMPILE_S = 3600.0     # how far back to look for a compile that still ran


def cold_chain(records: Sequence[RequestRecord], events: Sequence[CompileEvent]) -> ColdChain:
    """Which requests are cold (see the module docstring), in one pass in arrival order."""
    starts, ends, configs = _compile_intervals(events)
    cold: set[RecordKey] = set()
    source: dict[RecordKey, str] = {}
    cold_until, chain_source = float("-inf"), ""
    for record in sorted(records, key=lambda r: (r.arrival_s, r.seq)):
        key = record_key(record)
        queued, compiled_for = _compile_during(starts, ends, configs, record.arrival_s,
                                               record.start_s)
        if record.compile_stall_ms > 0 or queued:
            if record.arrival_s >= cold_until:        # a new chain starts here
                chain_source = (record.config_id if record.compile_stall_ms > 0
                                else (compiled_for or record.config_id))
        elif record.arrival_s >= cold_until:
            continue
        cold.add(key)
        source[key] = chain_source
        cold_until = max(cold_until, record.end_s)
    return ColdChain(frozenset(cold), source)


def warm_stats(records: Sequence[RequestRecord], chain: ColdChain) -> WarmStats:
    ok = [r for r in records if r.ok]
    warm = [r for r in ok if chain.is_warm(r)]
    return WarmStats(requests=len(warm), cold=len(ok) - len(warm),
                     latency_ms=summarize(r.latency_ms for r in warm),
                     ttft_ms=summarize(r.ttft_ms for r in warm),
                     tpot_ms=summarize(r.tpot_ms for r in warm),
                     queue_ms=summarize(r.queue_ms for r in warm))


def capacity_from_service_s(service_s: Iterable[float]) -> float | None:
    """The one capacity definition: requests/s served back to back, 1 ÷ the *mean* service
    time. The mean, not the median: an open-loop queue drains at the mean rate, so under a
    heavy tail (a long output now and then) the median's capacity is higher than the queue
    ever sees. None without a service time. Used by the live window, the segments, the
    dashboard's calibration, bench, tune and the doctor (docs/figures-and-definitions.md)."""
    mean_s = summarize(service_s).mean
    return 1.0 / mean_s if mean_s else None


def warm_service_s(records: Iterable[RequestRecord]) -> list[float]:
    """Each served request's service time (end − start, a batch's shared by its rows), of the
    requests whose own service waited on no compile."""
    return [(r.end_s - r.start_s) / r.batch_size for r in records
            if r.ok and r.compile_stall_ms <= 0]


def capacity_rps(records: Iterable[RequestRecord]) -> float | None:
    """Requests/s the engine serves, from its records: `capacity_from_service_s` over their
    warm service times (see the module docstring)."""
    return capacity_from_service_s(warm_service_s(records))


BACKLOG_DOMINATED_SHARE = 0.5


def backlog(records: Sequence[RequestRecord], chain: ColdChain, queue_depth: int,
            offered_rps: float | None, capacity: float | None,
            compiling: CompileInProgress | None, config_id: str) -> Backlog | None:
    """The backlog now: a queue while a compile runs, or while the latest served request is
    still cold (the chain has not ended). None without one."""
    if queue_depth <= 0:
        return None
    if compiling is not None:
        return Backlog(queue_depth, config_id, None, True)
    latest = max(records, key=lambda r: r.seq, default=None)
    if latest is None or chain.is_warm(latest):
        return None
    drain = None
    if capacity and capacity > (offered_rps or 0.0):
        drain = queue_depth / (capacity - (offered_rps or 0.0))
    return Backlog(queue_depth, chain.source.get(record_key(latest), latest.config_id),
                   drain, False)


def backlog_dominated(warm: WarmStats, draining: Backlog | None) -> bool:
    """A window's figures over all its requests read the backlog, not the steady state: a
    backlog drains now (served requests come from it; while the compile still runs they do
    not yet), or half or more of its requests were cold."""
    share = warm.cold_share
    return ((draining is not None and not draining.compiling)
            or (share is not None and share >= BACKLOG_DOMINATED_SHARE))
