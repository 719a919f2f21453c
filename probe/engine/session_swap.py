"""An engine handed another session: the dashboard's engine process swaps in its journaled
session after the engine is built (a restart, or a warm switch's side engine after its
prewarm), and `replay` its journaled one. The compile ledger's and the energy ledger's tallies
are keyed by the config ids of the session the engine served before, and ids are per session
(a prewarmed c1 can be the journaled session's c3), so they are keyed again by the new
session's id for the same options; a config the new session has not registered is dropped
(nothing of it was served there)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from probe.engine.engine import Engine


def follow_session(engine: Engine) -> None:
    """Called where the engine registers its options (set_options), after it did."""
    before = engine.ledger_session
    if before is engine.session:
        return
    now_ids = {entry.options: config_id for config_id, entry in engine.session.configs().items()}
    mapping = {config_id: now_ids.get(entry.options)
               for config_id, entry in before.configs().items()}
    engine.ledger.rekey(mapping)
    engine.graph_timer.rekey(mapping)
    engine.energy.rekey(mapping)
    engine.ledger_session = engine.session
