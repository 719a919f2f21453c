"""A config's TPOT and its roofline ratio: one value for every view. The latency panel's
roofline line, the doctor (its report's TPOT line) and `snapshot show`'s `warm tpot` column
all print `config_tpot()`.

The figure is the p50 TPOT of the config's **warm** requests (steady_state: none waited on a
compile, directly or queued behind one), so a compile stall inside a decode does not inflate
it; while no request of the config is warm yet it is over all of them, and says so. The
doctor's per-cause evidence is a different figure, labelled as such: the tail's own decode
time per token with compile time taken out (attribution's `decode` cause)."""

from __future__ import annotations

from typing import Sequence

from probe.analysis.batch_roofline import live_roofline_ms
from probe.analysis.stats import summarize
from probe.analysis.steady_state import ColdChain, cold_chain
from probe.contract.figures import ConfigTpot
from probe.contract.records import CompileEvent, RequestRecord, RooflineStatus


def config_tpot(records: Sequence[RequestRecord], events: Sequence[CompileEvent],
                config_id: str, roofline: RooflineStatus | None,
                chain: ColdChain | None = None) -> ConfigTpot:
    """`records`, `events`: the session's (a compile of any config makes a request cold);
    `roofline`: the one that applies to this config's precision, or None; `chain`: the
    session's cold chain when the caller has it."""
    chain = chain if chain is not None else cold_chain(records, events)
    mine = [r for r in records if r.config_id == config_id and r.ok and r.tpot_ms is not None]
    warm = [r for r in mine if chain.is_warm(r)]
    chosen = warm or mine
    tpot = summarize(r.tpot_ms for r in chosen).p50
    limit, rows = (None, 1.0) if roofline is None else live_roofline_ms(roofline, mine)
    return ConfigTpot(config_id, tpot, len(chosen), bool(warm), limit, rows)
