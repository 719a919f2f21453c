"""An engine handed another session: the dashboard's engine process swaps in its journaled
session after the engine is built (a restart, or a warm switch's side engine after its
prewarm), and `replay` its journaled one. The compile ledger's and the energy ledger's tallies
are keyed by the config ids of the session the engine served before, and ids are per session
(a prewarmed c1 can be the journaled session's c3), so they are keyed again by the new
session's id for the same options; a config the new session has not registered is dropped
(nothing of it was served there).

A side engine (a warm switch's, a live A/B's arm B) compiled in a session of its own, on a
clock of its own, before it joined: `carry_side_compiles` charges those compiles to the config
they were for in the session it joined (issue 49: the segment said "compiles 0" while the
ledger held the graphs)."""

from __future__ import annotations

from dataclasses import replace
from typing import Mapping, Protocol

from probe.common.clock import SessionClock
from probe.contract.options import OptConfig
from probe.contract.session import Session, SessionData


class _Rekeyed(Protocol):
    def rekey(self, mapping: Mapping[str, str | None]) -> None: ...


class Engine(Protocol):
    """What a session swap reads and sets of an engine: `probe.engine.engine.Engine` is one;
    declared here so that this module, which the engine imports, does not import it back."""
    session: Session
    ledger_session: Session         # the session whose config ids the ledgers are keyed by

    @property
    def ledger(self) -> _Rekeyed: ...
    @property
    def graph_timer(self) -> _Rekeyed: ...
    @property
    def energy(self) -> _Rekeyed: ...
    @property
    def probe(self) -> _Rekeyed: ...
    @property
    def clock(self) -> SessionClock: ...
    @property
    def options(self) -> OptConfig: ...

    def set_options(self, requested: OptConfig) -> str: ...


def _new_ids(engine: Engine, before: Session) -> dict[str, str | None]:
    """`before`'s config ids → the engine's session's id for the same options (the newest,
    where a config was served again under a new id)."""
    now_ids = {entry.options: config_id for config_id, entry in engine.session.configs().items()}
    return {config_id: now_ids.get(entry.options)
            for config_id, entry in before.configs().items()}


def follow_session(engine: Engine) -> None:
    """Called where the engine registers its options (set_options), after it did."""
    before = engine.ledger_session
    if before is engine.session:
        return
    mapping = _new_ids(engine, before)
    engine.ledger.rekey(mapping)
    engine.graph_timer.rekey(mapping)
    engine.energy.rekey(mapping)
    engine.probe.rekey(mapping)
    engine.ledger_session = engine.session


def serving_config(data: SessionData | None) -> str | None:
    """The config a session serves now: its last record's, else its last registered."""
    if data is None:
        return None
    if data.records:
        return data.records[-1].config_id
    return list(data.configs)[-1] if data.configs else None


def carry_side_compiles(engine: Engine, side: Session, side_clock_start: float,
                        beside: str | None) -> int:
    """Add to the engine's (joined) session the compile events `side` holds — the session
    the engine compiled in before it joined — under the joined session's config ids, their
    times moved onto its clock (`side_clock_start`: the perf_counter value the side engine's
    clock counted from), each marked `beside` the config that served meanwhile. Call it after
    the engine registered its options in the joined session. Returns how many it added."""
    mapping = _new_ids(engine, side)
    shift = side_clock_start - engine.clock.start
    carried = [replace(e, config_id=mapping[e.config_id], start_s=max(e.start_s + shift, 0.0),
                       beside=beside)
               for e in side.events() if e.config_id and mapping.get(e.config_id)]
    if carried:
        engine.session.add_events(carried)
    return len(carried)


def count_visits(engine: Engine) -> None:
    """The dashboard's engine with no journal serves its own session: make it count visits
    as the journaled one does (Session(per_visit=True)), holding what it holds so far."""
    session = Session(per_visit=True)
    session.restore(engine.session.freeze())
    engine.session = session
    engine.set_options(engine.options)
