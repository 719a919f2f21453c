"""The session journal: everything the engine commits to its Session — request records,
compile events, graph breaks, notices, configs, drift references, KV pools, the SLO — and
each request it dispatches, appended as one JSON line at the moment it is committed, in the
per-user state folder next to the engine logs; each config's energy and the compile ledger,
which change at every step, at most once a second (journal_accounts.py).

A restarted engine reads it back and continues the session (same clock, same records, the
crash marked); the dashboard writes the session JSON from it while no engine runs. Torch-free:
the dashboard's process reads it."""

from __future__ import annotations

import json
import os
import threading
from collections import Counter
from dataclasses import asdict, dataclass
from typing import Any, Callable, Mapping

from probe.analysis.compile_ledger import continued, with_pay_back
from probe.analysis.energy import continued_energy
from probe.contract.figures import ConfigEnergy
from probe.contract.objective import Slo
from probe.contract.options import OptConfig
from probe.contract.records import (
    CompileEvent,
    GraphBreakRecord,
    KVPool,
    LedgerEntry,
    Notice,
    RequestRecord,
)
from probe.contract.session import ConfigEntry, Session, SessionData
from probe.session_store.journal_accounts import ACCOUNTS_EVERY_S, JournaledAccounts

# The session JSON's sections that describe where the session ran, not what it served.
CONTEXT_SECTIONS = ("environment", "model", "trace", "settings", "live")


@dataclass(frozen=True)
class Dispatch:
    """A request handed to the engine's queue: it has a record once served, or never."""
    seq: int
    request_id: str
    input_tokens: int
    arrival_s: float


class JournalWriter:
    """Appends to a journal the dashboard created (0o600, O_EXCL|O_NOFOLLOW, like the logs).
    A write that fails (a full disk) ends journaling, never serving: `error` says why."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.error: str | None = None
        self._lock = threading.Lock()
        self._closing: list[Callable[[], None]] = []
        self._fd: int | None = os.open(path, os.O_RDWR | os.O_APPEND | os.O_NOFOLLOW)
        size = os.fstat(self._fd).st_size
        if size and os.pread(self._fd, 1, size - 1) != b"\n":
            self._write(b"\n")      # a predecessor killed mid-line: start ours on a line of its own

    def write(self, kind: str, value: Any) -> None:
        self._write(json.dumps({"kind": kind, "value": value}, separators=(",", ":")).encode()
                    + b"\n")

    def header(self, started_unix: float, context: Mapping[str, Any]) -> None:
        self.write("session", {"started_unix": started_unix, **context})

    def dispatch(self, dispatch: Dispatch) -> None:
        self.write("dispatch", asdict(dispatch))

    def before_close(self, write: Callable[[], None]) -> None:
        """`write` runs at `close`, before the file is closed: what is held back to be
        written later (the session's accounts) is written then."""
        self._closing.append(write)

    def close(self) -> None:
        for write in self._closing:
            write()
        self._closing = []
        with self._lock:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None

    def _write(self, data: bytes) -> None:
        # One write per line, whole: a kill can tear at most the last line, which readers skip.
        with self._lock:
            if self._fd is None:
                return
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(self._fd, view):]
            except OSError as exc:
                self.error = f"session journal {self.path}: {exc.strerror or exc}"
                os.close(self._fd)
                self._fd = None


class JournaledSession(Session):
    """A Session that journals every change as it is made (its running accounts, energy and
    the compile ledger, at most once a second: journal_accounts.py). Given `restored` (what an
    earlier engine of the session served), it holds that and goes on from it."""

    def __init__(self, writer: JournalWriter, restored: SessionData | None = None, *,
                 accounts_every_s: float | None = None, per_visit: bool = False) -> None:
        super().__init__(per_visit=per_visit)
        self._writer = writer
        self._accounts = JournaledAccounts(
            writer.write, self.accounts,
            every_s=ACCOUNTS_EVERY_S if accounts_every_s is None else accounts_every_s)
        writer.before_close(self._accounts.write)
        earlier = restored or SessionData()
        # what earlier engines counted: this engine's energy and ledger count from zero
        self._earlier_energy = dict(earlier.energy)
        self._earlier_ledger = {(e.config_id, e.function, e.key): e for e in earlier.compile_ledger}
        self._guard = threading.Lock()
        self._earlier_breaks = self._written_breaks = earlier.breaks
        self._known_configs = set(earlier.configs)
        self._written_pools: dict[str, KVPool] = dict(earlier.kv_pools)
        if restored is not None:
            self.restore(restored)
            self._accounts.seen(self.accounts())

    def config_id(self, options: OptConfig, notes: tuple[str, ...] = ()) -> str:
        with self._guard:
            return self._journaled(super().config_id, options, notes)

    def register(self, options: OptConfig, notes: tuple[str, ...] = ()) -> str:
        with self._guard:
            return self._journaled(super().register, options, notes)

    def _journaled(self, assign: Callable[[OptConfig, tuple[str, ...]], str],
                   options: OptConfig, notes: tuple[str, ...]) -> str:
        """Journal a config the first time it is named, and again when it gains notes."""
        before = self.configs()
        config_id = assign(options, notes)
        kept = self.config_notes(config_id)
        had = before[config_id].notes if config_id in before else None
        if config_id not in self._known_configs or kept != had:
            self._known_configs.add(config_id)
            self._writer.write("config", {"config_id": config_id,
                                          **ConfigEntry(config_id, options, kept).as_dict()})
        return config_id

    def add_record(self, record: RequestRecord) -> None:
        super().add_record(record)
        self._writer.write("record", asdict(record))

    def take_in(self, records: list[RequestRecord],
                events: list[CompileEvent] | None = None) -> None:
        """Records (and compile events) another engine of this session journaled already
        (the live A/B's arm B): held here, not written a second time."""
        for record in records:
            super().add_record(record)
        if events:
            super().add_events(events)

    def add_events(self, events: list[CompileEvent]) -> None:
        super().add_events(events)
        for event in events:
            self._writer.write("compile_event", asdict(event))

    def set_breaks(self, breaks: list[GraphBreakRecord]) -> None:
        """This engine's compile probe counts from zero: the earlier engines' breaks stay."""
        merged = merge_breaks(self._earlier_breaks, breaks)
        with self._guard:
            super().set_breaks(list(merged))
            if merged != self._written_breaks:
                self._written_breaks = merged
                self._writer.write("graph_breaks", [asdict(b) for b in merged])

    def add_reference(self, request_id: str, tokens: tuple[int, ...]) -> None:
        super().add_reference(request_id, tokens)
        self._writer.write("reference", {"request_id": request_id, "tokens": list(tokens)})

    def set_kv_pool(self, config_id: str, pool: KVPool) -> None:
        with self._guard:
            super().set_kv_pool(config_id, pool)
            if self._written_pools.get(config_id) != pool:
                self._written_pools[config_id] = pool
                self._writer.write("kv_pool", {"config_id": config_id, "pool": asdict(pool)})

    def set_energy(self, config_id: str, energy: ConfigEnergy) -> None:
        super().set_energy(config_id, continued_energy(self._earlier_energy.get(config_id),
                                                       energy))
        self._accounts.changed()

    def set_compile_ledger(self, entries: tuple[LedgerEntry, ...]) -> None:
        if self._earlier_ledger:    # earlier engines' calls go on, and pay-back is judged again
            super().set_compile_ledger(tuple(
                continued(self._earlier_ledger.get((e.config_id, e.function, e.key)), e)
                for e in entries))
            entries = with_pay_back(self.accounts()[1], self.configs())
        super().set_compile_ledger(entries)
        self._accounts.changed()

    def add_notice(self, notice: Notice) -> None:
        super().add_notice(notice)
        self._writer.write("notice", asdict(notice))

    def set_slo(self, slo: Slo | None) -> None:
        """Journaled too: a session recovered from its journal keeps its goodput."""
        super().set_slo(slo)
        self._writer.write("slo", None if slo is None else slo.as_dict())


def merge_breaks(*parts: tuple[GraphBreakRecord, ...] | list[GraphBreakRecord]
                 ) -> tuple[GraphBreakRecord, ...]:
    counts: Counter[tuple[str, str, str]] = Counter()
    for part in parts:
        for b in part:
            counts[(b.config_id, b.reason, b.location)] += b.count
    return tuple(GraphBreakRecord(config_id=c, reason=r, location=loc, count=n)
                 for (c, r, loc), n in sorted(counts.items()))


