"""Small views of a LiveSnapshot that panels share: pure functions, tested on their own.

Figures (percentiles, segments, headroom) are computed in probe.live/probe.stats; this module
only selects and pairs them for display.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from probe.live import LiveSnapshot
from probe.options import CHOICES, OptConfig
from probe.records import RequestRecord
from probe.stats import SegmentStats

# Options apply between requests, and the engine reads commands every 0.2 s: a request that
# started this long after the options were sent was served under them.
APPLY_MARGIN_S = 1.0


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


@dataclass(frozen=True)
class OptionState:
    name: str
    served: str                 # what the engine serves now
    asked: str                  # what the dashboard asked for
    status: str                 # "served" | "pending" (not served yet) | "changed" (by the engine)
    reason: str | None = None   # why the engine changed it


def served_since(snapshot: LiveSnapshot | None, sent_s: float | None) -> bool:
    """Whether the engine has served a request under options sent at session time `sent_s`
    (None: nothing sent since the engine started, with the options asked for)."""
    if sent_s is None:
        return True
    if snapshot is None:
        return False
    return any(r.start_s > sent_s + APPLY_MARGIN_S for r in snapshot.recent)


def config_notes(snapshot: LiveSnapshot, config_id: str) -> tuple[str, ...]:
    return next((e.notes for e in snapshot.configs if e.config_id == config_id), ())


def note_naming(option: str, notes: tuple[str, ...]) -> str | None:
    """The engine's note on an option it set itself: one that says the value it set
    ("…: decode=fullgraph", "…; quant stays off"), else one about the option ("freezing is an
    inductor option: …")."""
    for pattern in (rf"\b{option}(=| stays )", rf"^{option}\b"):
        found = next((note for note in notes if re.search(pattern, note)), None)
        if found is not None:
            return found
    return None


def option_states(asked: OptConfig, snapshot: LiveSnapshot | None,
                  served: bool) -> tuple[OptionState, ...]:
    """Each option as served, compared with what was asked. `served`: the engine has served a
    request since it was sent (served_since); until then a difference is pending, after it
    the engine chose otherwise, and its config's notes say why."""
    now = snapshot.options if snapshot is not None else asked
    notes = config_notes(snapshot, snapshot.config_id) if snapshot is not None else ()
    states = []
    for name in CHOICES:
        value, wanted = getattr(now, name), getattr(asked, name)
        if value == wanted:
            states.append(OptionState(name, value, wanted, "served"))
        elif not served:
            states.append(OptionState(name, value, wanted, "pending"))
        else:
            states.append(OptionState(name, value, wanted, "changed", note_naming(name, notes)))
    return tuple(states)


@dataclass(frozen=True)
class Failures:
    failed: int                          # over the session
    latest: RequestRecord | None         # the last failed request among the recent ones
    by_kind: tuple[tuple[str, int], ...]  # exception type → count, recent requests, most first
    recent_failed: int                   # failed requests among the recent ones


def error_kind(error: str) -> str:
    """The exception type an error message starts with ("OutOfMemoryError: CUDA out of…")."""
    kind = error.split(":", 1)[0].strip()
    return kind or "error"


def failures(snapshot: LiveSnapshot) -> Failures:
    failed = [r for r in snapshot.recent if not r.ok]
    kinds = Counter(error_kind(r.error or "") for r in failed)
    return Failures(snapshot.replay.failed, failed[-1] if failed else None,
                    tuple(kinds.most_common()), len(failed))
