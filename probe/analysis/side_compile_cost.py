"""What a warm switch's side compile costs the config that keeps serving: its requests' TPOT
while the side engine compiled, against its TPOT before. On a machine with few cores the side
compile takes cores the serving engine would have used (docs/steady-state.md, "The warm switch").

One definition, used by the dashboard's warm-switch line and its cut-over notice."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from statistics import median

from probe.contract.records import RequestRecord

BEFORE_REQUESTS = 20        # the serving config's latest requests before the side compile


@dataclass(frozen=True)
class SideCompileCost:
    tpot_before_ms: float       # median TPOT of the serving config's warm requests before
    tpot_during_ms: float       # ... of those served wholly while the side engine compiled
    before: int                 # how many requests each median is over
    during: int

    @property
    def slowdown(self) -> float:
        return self.tpot_during_ms / self.tpot_before_ms

    def text(self) -> str:
        """ "serving slowed 1.8× by the side compile (TPOT 42→76 ms)" """
        return (f"serving slowed {self.slowdown:.1f}× by the side compile (TPOT "
                f"{self.tpot_before_ms:.3g}→{self.tpot_during_ms:.3g} ms)")


def _warm_tpots(records: Iterable[RequestRecord]) -> list[float]:
    return [r.tpot_ms for r in records
            if r.ok and r.compile_stall_ms == 0 and r.tpot_ms is not None and r.tpot_ms > 0]


def side_compile_cost(records: Iterable[RequestRecord], config_id: str, since_s: float,
                      until_s: float) -> SideCompileCost | None:
    """The serving config `config_id`'s TPOT before `since_s` (its latest BEFORE_REQUESTS
    requests) against its requests that started at or after `since_s` and ended by `until_s`;
    None until both sides have a request."""
    served = [r for r in records if r.config_id == config_id]
    before = _warm_tpots([r for r in served if r.end_s < since_s])[-BEFORE_REQUESTS:]
    during = _warm_tpots([r for r in served if r.start_s >= since_s and r.end_s <= until_s])
    if not before or not during:
        return None
    return SideCompileCost(median(before), median(during), len(before), len(during))
