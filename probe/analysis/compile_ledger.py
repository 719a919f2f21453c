"""The compile ledger's arithmetic, torch-free: per compiled graph (a config, the function
called and its tensor arguments' shapes and dtypes), its served calls and their times, the
compile seconds it cost and the requests that waited on them, its share of the config's step
time, and whether it has paid its compile back against the same graph served eager.

The engine times the calls (probe/engine/observe/graph_timer.py) and hands them to a
`LedgerBook`; everything here is plain arithmetic on what it was handed.
"""

from __future__ import annotations

import random
import threading
from dataclasses import dataclass, field, replace
from typing import Iterable, Mapping, Sequence

from probe.analysis.break_even_live import eager_twin
from probe.common.percentile import median
from probe.contract.records import COMPILING, CompileEvent, LedgerEntry
from probe.contract.session import ConfigEntry

# Per-call times kept for a graph's median: every call up to this many, then a uniform
# reservoir of this size (Vitter's algorithm R), so the median of a long run is of a sample
# (`median_of` < `calls` says so) and a graph holds at most this many floats.
SAMPLE_CAP = 1024
# Compile events that started inside no recorded call yet: dynamo's end callback can be
# collected (by the live reporter) before the call that compiled returns. Kept for the next
# attribution, at most this many.
PENDING_EVENTS = 256
# Calls whose compile windows are kept per graph: a graph compiles once, then per recompile
# (dynamo stops at its recompile limit, 8 by default).
WINDOWS_KEPT = 64

GraphId = tuple[str, str, str]      # (config id, function, key)


@dataclass
class CompileWindow:
    """One call during which a compile ran: its span on the session clock, and the requests
    it served (none for a rehearsal)."""
    start_s: float
    end_s: float
    requests: tuple[str, ...]


@dataclass
class GraphTally:
    """One graph's running counts. `seed` fixes its reservoir, so a run is reproducible."""
    seed: int = 0
    calls: int = 0
    total_ms: float = 0.0
    sample: list[float] = field(default_factory=list)
    compile_s: float = 0.0
    stalled: dict[str, None] = field(default_factory=dict)   # ordered set of request ids
    windows: list[CompileWindow] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._rng = random.Random(self.seed)

    def add(self, ms: float) -> None:
        self.calls += 1
        self.total_ms += ms
        if len(self.sample) < SAMPLE_CAP:
            self.sample.append(ms)
            return
        slot = self._rng.randrange(self.calls)      # algorithm R: keep with p = cap / calls
        if slot < SAMPLE_CAP:
            self.sample[slot] = ms

    def median_ms(self) -> float | None:
        return median(self.sample) if self.sample else None

    def compiled_in(self, window: CompileWindow) -> None:
        if len(self.windows) < WINDOWS_KEPT:
            self.windows.append(window)

    def charge(self, event: CompileEvent, window: CompileWindow) -> None:
        self.compile_s += event.duration_s or 0.0
        for rid in window.requests:
            self.stalled[rid] = None


def _holds(window: CompileWindow, event: CompileEvent) -> bool:
    return window.start_s <= event.start_s <= window.end_s


class LedgerBook:
    """Every graph's tally, per config. Written by the engine's thread (calls), read and
    attributed by whichever thread flushes the compile probe: one lock."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._tallies: dict[GraphId, GraphTally] = {}
        self._pending: list[CompileEvent] = []
        self._entries: dict[GraphId, LedgerEntry] = {}    # cached until the tally changes
        self._dirty: set[GraphId] = set()

    def _tally(self, graph: GraphId) -> GraphTally:
        tally = self._tallies.get(graph)
        if tally is None:
            tally = self._tallies[graph] = GraphTally(seed=len(self._tallies))
        self._dirty.add(graph)
        return tally

    def add_call(self, graph: GraphId, ms: float | None, *, compiled_window: CompileWindow | None = None
                 ) -> None:
        """A call of `graph`: `ms` its run time (None: a rehearsal's, not counted), and where
        a compile ran inside it, the call's span and the requests it served."""
        with self._lock:
            tally = self._tally(graph)
            if ms is not None:
                tally.add(ms)
            if compiled_window is not None:
                tally.compiled_in(compiled_window)

    def attribute(self, events: Iterable[CompileEvent]) -> None:
        """Charge each compile event to the graph of its config whose compiling call it
        started inside. Matched by config and time, not by function name: a compiled
        `generate()` compiles frames of other names (forward, _sample, …) inside its call,
        and a recompile of a known function is told from its first compile by when it ran.
        An event no recorded call holds yet waits for the next attribution."""
        with self._lock:
            waiting = self._pending + [e for e in events
                                       if e.kind in COMPILING and e.config_id is not None]
            self._pending = []
            for event in waiting:
                graph = self._holder(event)
                if graph is None:
                    self._pending.append(event)
                    continue
                tally = self._tallies[graph]
                tally.charge(event, next(w for w in tally.windows if _holds(w, event)))
                self._dirty.add(graph)
            del self._pending[:-PENDING_EVENTS]

    def _holder(self, event: CompileEvent) -> GraphId | None:
        for graph, tally in self._tallies.items():
            if graph[0] == event.config_id and any(_holds(w, event) for w in tally.windows):
                return graph
        return None

    def rekey(self, mapping: Mapping[str, str | None]) -> None:
        """Config ids of another session (probe/engine/session_swap.py): each graph under its
        config's new id; a config mapped to None, or not in `mapping`, is dropped."""
        with self._lock:
            tallies: dict[GraphId, GraphTally] = {}
            for (config_id, function, key), tally in self._tallies.items():
                now = mapping.get(config_id)
                if now is not None:
                    tallies[(now, function, key)] = tally
            self._tallies = tallies
            self._pending = [replace(e, config_id=mapping.get(e.config_id or ""))
                             for e in self._pending if mapping.get(e.config_id or "")]
            self._entries, self._dirty = {}, set(tallies)

    def entries(self) -> tuple[LedgerEntry, ...]:
        """One entry per graph that was called or compiled, pay-back not yet judged (None):
        `with_pay_back` judges it across configs."""
        with self._lock:
            for graph in self._dirty:
                self._entries[graph] = _entry(graph, self._tallies[graph])
            self._dirty.clear()
            return tuple(self._entries.values())


def _entry(graph: GraphId, tally: GraphTally) -> LedgerEntry:
    config_id, function, key = graph
    return LedgerEntry(config_id=config_id, function=function, key=key, calls=tally.calls,
                       runtime_ms_total=tally.total_ms, runtime_ms_median=tally.median_ms(),
                       compile_s=tally.compile_s, stalled_requests=tuple(tally.stalled),
                       median_of=len(tally.sample))


def continued(earlier: LedgerEntry | None, now: LedgerEntry) -> LedgerEntry:
    """A graph's entry across engines of one session (a restarted engine's ledger counts from
    zero): calls, run time and compile seconds add, the stalled requests join, the median is
    the larger sample's (`median_of` says of how many), pay-back is judged again
    (`with_pay_back`)."""
    if earlier is None:
        return now
    sample = now if now.median_of >= earlier.median_of else earlier
    return replace(now, calls=earlier.calls + now.calls,
                   runtime_ms_total=earlier.runtime_ms_total + now.runtime_ms_total,
                   runtime_ms_median=sample.runtime_ms_median, median_of=sample.median_of,
                   compile_s=earlier.compile_s + now.compile_s,
                   stalled_requests=tuple(dict.fromkeys(earlier.stalled_requests
                                                        + now.stalled_requests)),
                   paid_back=None)


def per_call_ms(entry: LedgerEntry) -> float | None:
    return entry.runtime_ms_total / entry.calls if entry.calls else None


def saved_s(compiled: LedgerEntry, eager: LedgerEntry) -> float | None:
    """What the compiled graph's calls saved against the same graph served eager:
    calls × (eager − compiled mean per-call time), in seconds (negative: it cost time).
    Means, not medians: pay-back is a sum over calls."""
    compiled_ms, eager_ms = per_call_ms(compiled), per_call_ms(eager)
    if compiled_ms is None or eager_ms is None:
        return None
    return compiled.calls * (eager_ms - compiled_ms) / 1e3


def paid_back(compiled: LedgerEntry, eager: LedgerEntry | None) -> bool | None:
    """saved ≥ compile seconds; None where no eager call of the same graph was timed."""
    saved = None if eager is None else saved_s(compiled, eager)
    return None if saved is None else saved >= compiled.compile_s


def with_pay_back(entries: Sequence[LedgerEntry], configs: Mapping[str, ConfigEntry]
                  ) -> tuple[LedgerEntry, ...]:
    """Each compiled config's entries judged against the same function and key in its eager
    twin (the same options, compile off: break_even_live.eager_twin), a segment of the same
    session. An eager config's entries, and any without a twin's timed call, stay None."""
    twin_of: dict[str, str] = {}
    for config_id, entry in configs.items():
        if entry.options.compiled:
            twin = eager_twin(entry.options)
            match = next((cid for cid, e in configs.items() if e.options == twin), None)
            if match is not None:
                twin_of[config_id] = match
    by_graph = {(e.config_id, e.function, e.key): e for e in entries} if twin_of else {}
    judged = []
    for e in entries:
        twin_id = twin_of.get(e.config_id)
        eager = None if twin_id is None else by_graph.get((twin_id, e.function, e.key))
        verdict = None if twin_id is None else paid_back(e, eager)
        # the engine judges its whole ledger at every flush: a verdict that stands is kept
        judged.append(e if verdict is e.paid_back else replace(e, paid_back=verdict))
    return tuple(judged)


def step_shares(entries: Sequence[LedgerEntry]) -> dict[GraphId, float | None]:
    """Each graph's share of its config's step time: its run time over the Σ run time of
    every graph the config called (what the engine spent inside its timed callables). None
    for a config with no time timed."""
    totals: dict[str, float] = {}
    for e in entries:
        totals[e.config_id] = totals.get(e.config_id, 0.0) + e.runtime_ms_total
    return {(e.config_id, e.function, e.key):
            (e.runtime_ms_total / totals[e.config_id] if totals[e.config_id] > 0 else None)
            for e in entries}


def ledger_summary(entries: Sequence[LedgerEntry], config_id: str) -> str | None:
    """One line for the recompilations panel: "ledger 3 graphs · 2 paid back · 1 not yet ·
    0 unknown"; None where the config has no compiled graph."""
    mine = [e for e in entries if e.config_id == config_id and e.compile_s > 0]
    if not mine:
        return None
    paid = sum(e.paid_back is True for e in mine)
    unpaid = sum(e.paid_back is False for e in mine)
    unknown = sum(e.paid_back is None for e in mine)
    return (f"ledger {len(mine)} graph{'s' * (len(mine) != 1)} · {paid} paid back · "
            f"{unpaid} not yet · {unknown} no eager twin")
