"""Offered load against capacity: one value and one sentence for every view. The throughput
panel, the doctor (its saturation finding and next step), the checklist's "load tested at
peak" and the overload line all print `Load.text()` of the same `Load`.

Two scopes, labelled wherever printed, because they legitimately differ:

- **live** (`live_load`): the serving loop's arrivals over the last OFFERED_WINDOW_S seconds,
  the requests still queued included, against the window's capacity. What the dashboard and
  its doctor read at that moment.
- **a set of records** (`records_load`, a saved segment): the arrivals of the set's requests,
  first to last, against their capacity. A request that arrived and was never served is not in
  a saved session's records, so under a backlog this reads lower than the live figure did.

Capacity is `steady_state.capacity_rps` (one over the mean warm service time) in both."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from probe.analysis.steady_state import capacity_rps
from probe.common.units import fmt_rate
from probe.contract.records import RequestRecord

LIVE_SCOPE = "last 30 s"


@dataclass(frozen=True)
class Load:
    offered_rps: float | None
    capacity_rps: float | None
    scope: str                  # what the offered rate counts: LIVE_SCOPE, "c3's arrivals"

    @property
    def share(self) -> float | None:
        """Offered over capacity (1.0: at capacity); None when either is unknown."""
        if not self.offered_rps or not self.capacity_rps:
            return None
        return self.offered_rps / self.capacity_rps

    def rates_text(self) -> str:
        """ "offered 0.28 req/s · capacity 0.22 req/s" """
        return (f"offered {fmt_rate(self.offered_rps, 'req/s')} · capacity "
                f"{fmt_rate(self.capacity_rps, 'req/s')}")

    def share_text(self) -> str:
        """ "offered 127% of capacity (last 30 s)" """
        share = self.share
        pct = "—" if share is None else f"{share:.0%}"
        return f"offered {pct} of capacity ({self.scope})"

    def text(self) -> str:
        """ "offered 0.28 req/s · capacity 0.22 req/s · offered 127% of capacity (last 30 s)":
        the one sentence (a narrow panel prints its two halves on two lines)."""
        return f"{self.rates_text()} · {self.share_text()}"


def live_load(offered_rps: float | None, capacity: float | None) -> Load:
    """The serving loop's figures (ReplayStatus.offered_rps and .capacity_rps)."""
    return Load(offered_rps, capacity, LIVE_SCOPE)


def arrivals_rps(records: Sequence[RequestRecord]) -> float | None:
    """Arrivals per second over the set's arrivals (first to last), failed ones included."""
    arrivals = sorted(r.arrival_s for r in records)
    if len(arrivals) < 2 or arrivals[-1] <= arrivals[0]:
        return None
    return (len(arrivals) - 1) / (arrivals[-1] - arrivals[0])


def records_load(records: Sequence[RequestRecord], scope: str) -> Load:
    """A set's own load: `scope` names the set ("c3's arrivals")."""
    return Load(arrivals_rps(records), capacity_rps(records), scope)
