"""What a warm switch's side compile costs the config that keeps serving: its requests' TPOT
while the side engine compiled, against its TPOT before. On a machine with few cores the side
compile takes cores the serving engine would have used (docs/steady-state.md, "The warm switch").

One definition, used by the dashboard's warm-switch line while the side engine compiles, and
(`side_compiles`, over the side compiles' own span in the saved session) by the cut-over
notice and `snapshot show`."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from probe.analysis.stats import compile_s
from probe.common.percentile import median
from probe.contract.records import COMPILING, RequestRecord
from probe.contract.session import SessionData

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
        """ "serving slowed 1.8× by the side compile (TPOT 42→76 ms)", or "serving not slowed
        by the side compile (TPOT 33.4→31.3 ms)" where it ran as fast or faster (a slowdown
        under 1 reads as nonsense) """
        tpot = f"TPOT {self.tpot_before_ms:.3g}→{self.tpot_during_ms:.3g} ms"
        if round(self.slowdown, 1) <= 1.0:
            return f"serving not slowed by the side compile ({tpot})"
        return f"serving slowed {self.slowdown:.1f}× by the side compile ({tpot})"


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
    return SideCompileCost(median(before) or 0.0, median(during) or 0.0, len(before),
                           len(during))


@dataclass(frozen=True)
class SideCompile:
    """A config's compiles that a side engine ran beside the serving one (a warm switch's,
    or a live A/B's arm B's), as the saved session holds them: charged to that config, and
    what they cost the config that served meanwhile, over the compiles' own span."""
    config_id: str
    beside: str                 # the config that served while they ran
    compiles: int
    graphs: int
    seconds: float              # Σ their durations
    since_s: float              # the first one's start
    until_s: float              # the last one's end
    cost: SideCompileCost | None

    def text(self) -> str:
        """ "4 compiles (12 graphs, 41.0 s) beside c2; serving slowed 1.8× by the side
        compile (TPOT 42→76 ms)" """
        plural = "s" * (self.compiles != 1)
        cost = (self.cost.text() if self.cost else
                f"{self.beside}'s slowdown not measured (no warm request of it was served "
                f"wholly, and another before, during the compiles)")
        return (f"{self.compiles} compile{plural} ({self.graphs} graph"
                f"{'s' * (self.graphs != 1)}, {self.seconds:.1f} s) beside {self.beside}; "
                f"{cost}")


def side_compiles(data: SessionData, config_id: str) -> SideCompile | None:
    """`config_id`'s side compiles (events marked `beside`), the latest serving config's
    (one warm switch a segment: a config served again opens a segment of its own); None
    where it has none."""
    mine = [e for e in data.events
            if e.config_id == config_id and e.beside and e.kind in COMPILING]
    if not mine:
        return None
    beside = mine[-1].beside or ""
    mine = [e for e in mine if e.beside == beside]
    since = min(e.start_s for e in mine)
    until = max(e.start_s + (e.duration_s or 0.0) for e in mine)
    return SideCompile(config_id, beside, len(mine), sum(e.graphs for e in mine),
                       compile_s(mine), since, until,
                       side_compile_cost(data.records, beside, since, until))
