"""A config's TPOT and its roofline ratio: one value for every view. The latency panel's
roofline line, the doctor (its report's TPOT line) and `snapshot show`'s `warm tpot` column
all print `config_tpot()`.

The figure is the p50 TPOT of the config's **warm** requests (steady_state: none waited on a
compile, directly or queued behind one), so a compile stall inside a decode does not inflate
it; while no request of the config is warm yet it is over all of them, and says so. The
doctor's per-cause evidence is a different figure, labelled as such: the tail's own decode
time per token with compile time taken out (attribution's `decode` cause)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from probe.contract.batch_roofline import BATCHED, live_roofline_ms
from probe.contract.records import CompileEvent, RequestRecord, RooflineStatus
from probe.contract.stats import summarize
from probe.contract.steady_state import ColdChain, cold_chain
from probe.contract.units import fmt_ms, fmt_ratio


@dataclass(frozen=True)
class ConfigTpot:
    config_id: str
    tpot_ms: float | None       # p50 over `requests`
    requests: int               # the requests it is over
    warm: bool                  # over the warm ones (False: none warm yet, over all)
    limit_ms: float | None      # the roofline it is held against (None: not measured)
    rows: float = 1.0           # mean rows per step (a batch's roofline above BATCHED)

    @property
    def ratio(self) -> float | None:
        if self.tpot_ms is None or not self.limit_ms:
            return None
        return self.tpot_ms / self.limit_ms

    def scope(self) -> str:
        return (f"warm p50, {self.requests} req" if self.warm else
                f"p50 of {self.requests} req, none warm yet")

    def text(self) -> str:
        """ "c3 TPOT 4.10 ms (warm p50, 40 req) · 2.3× roofline" """
        ratio = self.ratio
        which = f"batch-{self.rows:.1f} roofline" if self.rows > BATCHED else "roofline"
        limit = "" if ratio is None else f" · {fmt_ratio(ratio)} {which}"
        return f"{self.config_id} TPOT {fmt_ms(self.tpot_ms)} ({self.scope()}){limit}"


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
