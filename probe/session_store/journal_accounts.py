"""The session's running accounts in its journal: each config's energy (its idle floor beside
the requests' joules) and the compile ledger. They change at every engine step, so they are
written on change at most once every `ACCOUNTS_EVERY_S` — the last change always within
that (a timer), and at the writer's close — each line holding only what changed since the last:
a kill loses at most that second of them, never a record. Torch-free."""

from __future__ import annotations

import threading
import time
from dataclasses import asdict
from typing import Any, Callable

from probe.contract.figures import ConfigEnergy
from probe.contract.records import LedgerEntry

ACCOUNTS_EVERY_S = 1.0

GraphId = tuple[str, str, str]
Accounts = tuple[dict[str, ConfigEnergy], tuple[LedgerEntry, ...]]


def graph_id(entry: LedgerEntry) -> GraphId:
    return entry.config_id, entry.function, entry.key


class JournaledAccounts:
    """Writes (a JournalWriter's `write(kind, value)`) what `read()` returns that differs from
    what it wrote (or `seen`) before."""

    def __init__(self, write: Callable[[str, Any], None], read: Callable[[], Accounts], *,
                 every_s: float = ACCOUNTS_EVERY_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._put, self._read = write, read
        self._every_s, self._clock = every_s, clock
        self._lock = threading.Lock()
        self._energy: dict[str, ConfigEnergy] = {}
        self._ledger: dict[GraphId, LedgerEntry] = {}
        self._last = float("-inf")
        self._timer: threading.Timer | None = None

    def seen(self, accounts: Accounts) -> None:
        """Already in the journal (a restored session's): not written again unless changed."""
        energy, ledger = accounts
        with self._lock:
            self._energy.update(energy)
            self._ledger.update((graph_id(e), e) for e in ledger)

    def changed(self) -> None:
        """The accounts changed: written now, or by the timer within `every_s`."""
        with self._lock:
            wait = self._last + self._every_s - self._clock()
            if wait <= 0:
                self._write()
            elif self._timer is None:
                self._timer = threading.Timer(wait, self.write)
                self._timer.daemon = True
                self._timer.start()

    def write(self) -> None:
        """Write what changed now (the timer, the writer's close, a test)."""
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            self._write()

    def _write(self) -> None:
        """Only a line written starts the next second's wait: a change after a call that found
        nothing new (the engine's first flushes, before any graph) is written at once."""
        energy, ledger = self._read()
        for config_id, value in energy.items():
            if self._energy.get(config_id) != value:
                self._energy[config_id] = value
                self._put("energy", {"config_id": config_id, **asdict(value)})
                self._last = self._clock()
        changed = [e for e in ledger if self._ledger.get(graph_id(e)) != e]
        if changed:
            self._ledger.update((graph_id(e), e) for e in changed)
            self._put("compile_ledger", [asdict(e) for e in changed])
            self._last = self._clock()
