"""Capacity at the SLO: the highest offered rate at which a config keeps SLO attainment at or
above a target, found in a few open-loop runs — bracket first (double or halve the rate until
one run meets the target and one does not), then bisect the bracket geometrically until it is
narrow enough or the runs are spent. Halving stops early at a run that missed with every
request served alone (none arrived before the one ahead of it had finished): that run was
already at zero load, so no lower rate can meet the target, only take longer to replay.
Pure: `measure(rate)` runs the replay (a real engine, or a fake one in tests) and returns
that run's attainment.

The answer is the bracket's low end, a rate that was measured to meet the target; the high end
is the lowest rate measured to miss it (None: none missed within the runs allowed)."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Callable, Generator

DEFAULT_TARGET = 0.9
DEFAULT_RUNS = 6
GROWTH = 2.0               # bracketing steps: ×2 up, ÷2 down
NARROW_ENOUGH = 1.15       # stop bisecting once high / low is at most this
FLOOR_RPS = 1e-3           # halving never goes below this rate


@dataclass(frozen=True)
class RateRun:
    """One open-loop run: its offered rate and what it attained (None: nothing to judge)."""
    rate_rps: float
    slo_attainment: float | None
    goodput_rps: float | None = None
    session: str | None = None          # the run's saved session, for `snapshot compare`
    alone: bool = False                 # each request arrived after the one before finished

    def meets(self, target: float) -> bool:
        return self.slo_attainment is not None and self.slo_attainment >= target

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class Capacity:
    target: float
    capacity_rps: float | None          # highest rate measured to meet the target
    bracket: tuple[float | None, float | None]   # (meets, misses)
    runs: tuple[RateRun, ...]           # in the order they ran

    def text(self) -> str:
        low, high = self.bracket
        if low is None:
            unloaded = " with every request served alone" if self.runs[-1].alone else ""
            return (f"no rate met {self.target:.0%} attainment (lowest tried "
                    f"{high:.3g} req/s{unloaded}) in {len(self.runs)} runs")
        upper = f"{high:.3g}" if high is not None else "not found"
        return (f"{low:.3g} req/s at ≥{self.target:.0%} attainment (bracket {low:.3g}–{upper} "
                f"req/s, {len(self.runs)} runs)")

    def as_dict(self) -> dict:
        return {"target": self.target, "capacity_rps": self.capacity_rps,
                "bracket_rps": list(self.bracket), "runs": [r.as_dict() for r in self.runs],
                "text": self.text()}


def find_capacity(measure: Callable[[float], RateRun], *, start_rps: float,
                  target: float = DEFAULT_TARGET, max_runs: int = DEFAULT_RUNS) -> Capacity:
    """Bracket from `start_rps`, then bisect; never more than `max_runs` calls to `measure`."""
    search = capacity_search(start_rps=start_rps, target=target, max_runs=max_runs)
    return interleave([search], [measure])[0]


# A search as a generator: it yields the next rate to run and is sent that run's RateRun, so
# that two searches can take turns run by run (tune measures a candidate alternated with the
# config it would replace) without threads.
Search = Generator[float, RateRun, Capacity]


def capacity_search(*, start_rps: float, target: float = DEFAULT_TARGET,
                    max_runs: int = DEFAULT_RUNS) -> Search:
    if not (start_rps > 0 and math.isfinite(start_rps)):
        raise ValueError(f"start_rps must be a positive rate, got {start_rps!r}")
    if max_runs < 2:
        raise ValueError("the search needs at least 2 runs to bracket")
    runs: list[RateRun] = []

    def meets(result: RateRun) -> bool:
        runs.append(result)
        return result.meets(target)

    low: float | None = None
    high: float | None = None
    rate = start_rps
    if meets((yield rate)):
        low = rate
        while high is None and len(runs) < max_runs:
            rate *= GROWTH
            if meets((yield rate)):
                low = rate
            else:
                high = rate
    else:
        high = rate
        while (low is None and len(runs) < max_runs and rate / GROWTH >= FLOOR_RPS
               and not runs[-1].alone):
            rate /= GROWTH
            if meets((yield rate)):
                low = rate
            else:
                high = rate
    while low is not None and high is not None and high / low > NARROW_ENOUGH \
            and len(runs) < max_runs:
        middle = math.sqrt(low * high)
        if meets((yield middle)):
            low = middle
        else:
            high = middle
    return Capacity(target=target, capacity_rps=low, bracket=(low, high), runs=tuple(runs))


def interleave(searches: list[Search], measures: list[Callable[[float], RateRun]]
               ) -> list[Capacity]:
    """Run several searches taking turns, one run each in order, until every one has ended:
    runs of different configs alternate in time, so the machine's drift falls on all alike."""
    found: list[Capacity | None] = [None] * len(searches)
    pending: dict[int, float] = {}
    for i, search in enumerate(searches):
        try:
            pending[i] = next(search)
        except StopIteration as done:
            found[i] = done.value
    while pending:
        for i in list(pending):
            result = measures[i](pending[i])
            try:
                pending[i] = searches[i].send(result)
            except StopIteration as done:
                found[i] = done.value
                del pending[i]
    return [f for f in found if f is not None]
