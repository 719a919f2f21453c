"""Small views of a LiveSnapshot that panels share: pure functions, tested on their own.

Figures (percentiles, segments, headroom) are computed in probe.live/probe.stats; this module
only selects and pairs them for display.
"""

from __future__ import annotations

from dataclasses import dataclass

from probe.live import LiveSnapshot
from probe.records import RequestRecord
from probe.stats import SegmentStats


@dataclass(frozen=True)
class ConfigChange:
    t_s: float                  # start of the first request served under the new config
    config_id: str


@dataclass(frozen=True)
class KVWaste:
    requests: int
    allocated_bytes: int        # summed over those requests
    used_bytes: int

    @property
    def waste_bytes(self) -> int:
        return self.allocated_bytes - self.used_bytes

    @property
    def waste_fraction(self) -> float | None:
        return self.waste_bytes / self.allocated_bytes if self.allocated_bytes else None


def config_changes(recent: tuple[RequestRecord, ...]) -> list[ConfigChange]:
    """Where the serving config changed, read from the requests themselves (in seq order)."""
    changes: list[ConfigChange] = []
    previous: str | None = None
    for record in sorted(recent, key=lambda r: r.seq):
        if previous is not None and record.config_id != previous:
            changes.append(ConfigChange(record.start_s, record.config_id))
        previous = record.config_id
    return changes


def previous_config_id(snapshot: LiveSnapshot) -> str | None:
    """The config served before the current one: the last other config among recent
    requests, else the segment listed before the current one."""
    for record in sorted(snapshot.recent, key=lambda r: r.seq, reverse=True):
        if record.config_id != snapshot.config_id:
            return record.config_id
    ids = [s.config_id for s in snapshot.segments]
    if snapshot.config_id in ids:
        index = ids.index(snapshot.config_id)
        return ids[index - 1] if index > 0 else None
    return ids[-1] if ids else None


def segment(snapshot: LiveSnapshot, config_id: str | None) -> SegmentStats | None:
    return next((s for s in snapshot.segments if s.config_id == config_id), None)


def config_label(snapshot: LiveSnapshot, config_id: str | None) -> str:
    for entry in snapshot.configs:
        if entry.config_id == config_id:
            return entry.options.label()
    return snapshot.options.label() if config_id == snapshot.config_id else "?"


def kv_waste(snapshot: LiveSnapshot) -> KVWaste:
    """Allocated vs filled KV-cache bytes over the recent requests of the current config."""
    ok = [r for r in snapshot.recent if r.ok and r.config_id == snapshot.config_id]
    return KVWaste(len(ok), sum(r.kv_cache_bytes for r in ok),
                   sum(r.kv_cache_used_bytes for r in ok))


def compiling_elapsed_s(snapshot: LiveSnapshot, since_arrival_s: float) -> float | None:
    """How long the running compile has taken: engine clock at publish time, plus the local
    time since this snapshot arrived (the engine publishes rarely while it compiles)."""
    if snapshot.compiling_since_s is None:
        return None
    return max(snapshot.t_s - snapshot.compiling_since_s, 0.0) + max(since_arrival_s, 0.0)
