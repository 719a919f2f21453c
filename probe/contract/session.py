"""A session in memory: `Session` while the engine serves it (append-only, its records kept as
they come), `SessionData` once frozen, which everything else reads. One session is what one
dashboard run (across engine restarts), one `replay` or one bench run served; on disk it is a
journal while it runs and a snapshot once saved (probe/session_store/)."""

from __future__ import annotations

import bisect
import threading
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Mapping

from probe.contract.figures import ConfigEnergy
from probe.contract.objective import Slo
from probe.contract.options import OptConfig
from probe.contract.records import (
    BatchSteps,
    CompileEvent,
    GraphBreakRecord,
    KVPool,
    LedgerEntry,
    Notice,
    RequestRecord,
)

AB_ARM_NOTE = "arm B of a live A/B against "     # + arm A's config id: a config's note


def ab_arm_note(control_id: str) -> str:
    """The note a live A/B's arm B config carries: the checklist judges the pair as the A/B."""
    return f"{AB_ARM_NOTE}{control_id}"


@dataclass(frozen=True)
class ConfigEntry:
    """A config as the session served it: its id (c1, c2, … in order of first use), its
    options, and what the engine noted about it."""
    config_id: str
    options: OptConfig
    notes: tuple[str, ...] = ()

    @property
    def ab_control(self) -> str | None:
        """Arm A's config id, when this config was a live A/B's arm B."""
        return next((n[len(AB_ARM_NOTE):] for n in self.notes if n.startswith(AB_ARM_NOTE)),
                    None)

    def as_dict(self) -> dict:
        return {**self.options.as_dict(), "label": self.options.label(), "notes": list(self.notes)}


@dataclass(frozen=True)
class SessionData:
    records: tuple[RequestRecord, ...] = ()
    events: tuple[CompileEvent, ...] = ()
    breaks: tuple[GraphBreakRecord, ...] = ()
    configs: Mapping[str, ConfigEntry] = field(default_factory=lambda: MappingProxyType({}))
    notices: tuple[Notice, ...] = ()
    # request id → the fp32 eager reference tokens of a drift-sampled request
    references: Mapping[str, tuple[int, ...]] = field(
        default_factory=lambda: MappingProxyType({}))
    kv_pools: Mapping[str, KVPool] = field(default_factory=lambda: MappingProxyType({}))
    slo: Slo | None = None          # what goodput and attainment are measured against
    # continuous batching's recent steps, per config (host time against the GPU's period)
    batch_steps: Mapping[str, BatchSteps] = field(default_factory=lambda: MappingProxyType({}))
    # per config: the energy counter's source and idle floor, or why there is none
    energy: Mapping[str, ConfigEnergy] = field(default_factory=lambda: MappingProxyType({}))
    # what each compiled graph earned (probe/analysis/compile_ledger.py), first call first
    compile_ledger: tuple[LedgerEntry, ...] = ()

    def current_config(self, serving: str | None = None) -> str | None:
        """The config served now, the one answer every view gives (the dashboard's status bar,
        `--load`, `doctor --verify`, a recovered journal): `serving`, what the engine said it
        served when the session was saved, if the session knows it; else the config of the
        latest arrival; else the last config registered; None for an empty session. (The
        latest arrival alone is wrong after an A/B kept A: arm B's last request may be it.)"""
        if serving is not None and serving in self.configs:
            return serving
        latest = max(self.records, key=lambda r: (r.arrival_s, r.seq), default=None)
        if latest is not None:
            return latest.config_id
        return list(self.configs)[-1] if self.configs else None


class Session:
    """Append-only, guarded by a lock: the engine thread writes, reporters read `freeze()`.

    `per_visit` (the dashboard's sessions): a config served again after another one opens a
    new id, and so a segment of its own, so that an earlier segment's figures never change
    once the user left it (issue 49: going back to eager merged the compiles' backlog into
    c1's row). Without it (bench's passes alternate configs on one engine) identical options
    share one id."""

    def __init__(self, *, per_visit: bool = False) -> None:
        self._per_visit = per_visit
        self._current: str | None = None      # the config the engine serves (per_visit)
        self._lock = threading.Lock()
        self._records: list[RequestRecord] = []
        self._events: list[CompileEvent] = []
        self._breaks: tuple[GraphBreakRecord, ...] = ()
        self._configs: dict[str, ConfigEntry] = {}
        self._notices: list[Notice] = []
        self._references: dict[str, tuple[int, ...]] = {}
        self._kv_pools: dict[str, KVPool] = {}
        self._batch_steps: dict[str, BatchSteps] = {}
        self._energy: dict[str, ConfigEnergy] = {}
        self._ledger: dict[tuple[str, str, str], LedgerEntry] = {}
        self._slo: Slo | None = None

    def set_slo(self, slo: Slo | None) -> None:
        with self._lock:
            self._slo = slo

    def config_id(self, options: OptConfig, notes: tuple[str, ...] = ()) -> str:
        """The id the engine serves `options` under from now on: ids are c1, c2, … in order of
        use. Identical options share an id (and a segment) — with `per_visit`, only while the
        engine stays on them: a return opens a new id. A config reached again with notes it
        lacks keeps them too: an ask the engine refused outright (parallel=large without
        compile) lands on the config already served, and its note is why."""
        with self._lock:
            self._current = self._id_for(options, notes)
            return self._current

    def register(self, options: OptConfig, notes: tuple[str, ...] = ()) -> str:
        """A config another engine of the session serves (a live A/B's arm B): its id, as
        that engine registered it, without making it the one this engine serves."""
        with self._lock:
            return self._id_for(options, notes)

    def _id_for(self, options: OptConfig, notes: tuple[str, ...]) -> str:
        if self._per_visit:
            ids = list(self._configs)
            same = [cid for cid in (self._current, ids[-1] if ids else None)
                    if cid is not None and self._configs[cid].options == options]
        else:
            same = [cid for cid, entry in self._configs.items() if entry.options == options]
        if same:
            entry = self._configs[same[0]]
            added = tuple(n for n in notes if n not in entry.notes)
            if added:
                self._configs[entry.config_id] = replace(entry, notes=entry.notes + added)
            return entry.config_id
        config_id = f"c{len(self._configs) + 1}"
        self._configs[config_id] = ConfigEntry(config_id, options, notes)
        return config_id

    def configs(self) -> Mapping[str, ConfigEntry]:
        with self._lock:
            return MappingProxyType(dict(self._configs))

    def config_notes(self, config_id: str) -> tuple[str, ...]:
        with self._lock:
            entry = self._configs.get(config_id)
            return entry.notes if entry is not None else ()

    def add_record(self, record: RequestRecord) -> None:
        with self._lock:
            self._records.append(record)

    def add_events(self, events: list[CompileEvent]) -> None:
        """Kept in start order: the engine and the live reporter both hand events in."""
        with self._lock:
            for event in events:
                bisect.insort(self._events, event, key=lambda e: e.start_s)

    def events(self) -> tuple[CompileEvent, ...]:
        """The compile events alone: what a per-request reader needs, without freezing (and
        copying) every record each time."""
        with self._lock:
            return tuple(self._events)

    def set_breaks(self, breaks: list[GraphBreakRecord]) -> None:
        with self._lock:
            self._breaks = tuple(breaks)

    def add_reference(self, request_id: str, tokens: tuple[int, ...]) -> None:
        with self._lock:
            self._references[request_id] = tokens

    def set_kv_pool(self, config_id: str, pool: KVPool) -> None:
        with self._lock:
            self._kv_pools[config_id] = pool

    def set_batch_steps(self, config_id: str, steps: BatchSteps) -> None:
        with self._lock:
            self._batch_steps[config_id] = steps

    def set_energy(self, config_id: str, energy: ConfigEnergy) -> None:
        with self._lock:
            self._energy[config_id] = energy

    def set_compile_ledger(self, entries: tuple[LedgerEntry, ...]) -> None:
        """The engine's ledger as it stands: each graph's entry replaces its last (a graph a
        restored session held and this engine has not called keeps its saved entry)."""
        with self._lock:
            for entry in entries:
                self._ledger[(entry.config_id, entry.function, entry.key)] = entry

    def accounts(self) -> tuple[dict[str, ConfigEnergy], tuple[LedgerEntry, ...]]:
        """Each config's energy and the compile ledger alone, without freezing (and copying)
        every record: what the journal writes of them."""
        with self._lock:
            return dict(self._energy), tuple(self._ledger.values())

    def add_notice(self, notice: Notice) -> None:
        with self._lock:
            self._notices.append(notice)

    def restore(self, data: SessionData) -> None:
        """Hold `data` instead: a restarted engine goes on from what its predecessor served."""
        with self._lock:
            self._records, self._events = list(data.records), list(data.events)
            self._breaks, self._notices = data.breaks, list(data.notices)
            self._configs = dict(data.configs)
            # what a restart goes on from: the config registered last (the one the engine was
            # switching to when it stopped, whose compile x gave up, has no record yet)
            self._current = next(reversed(self._configs), None)
            self._references, self._kv_pools = dict(data.references), dict(data.kv_pools)
            self._batch_steps = dict(data.batch_steps)
            self._energy = dict(data.energy)
            self._ledger = {(e.config_id, e.function, e.key): e for e in data.compile_ledger}
            self._slo = data.slo if data.slo is not None else self._slo

    def freeze(self) -> SessionData:
        with self._lock:
            return SessionData(tuple(self._records), tuple(self._events), self._breaks,
                               MappingProxyType(dict(self._configs)), tuple(self._notices),
                               MappingProxyType(dict(self._references)),
                               MappingProxyType(dict(self._kv_pools)), self._slo,
                               MappingProxyType(dict(self._batch_steps)),
                               MappingProxyType(dict(self._energy)),
                               tuple(self._ledger.values()))
