"""A replay's rate factor as a clock speed and a share of arrivals kept.

The dashboard slows a trace by slowing its clock down to ×0.125 (CLOCK_FLOOR) and no further:
slower, a minute's burst would last over eight, and the trace's shape is lost to the eye.
Below the floor it *thins* the trace instead: the clock stays at the floor and a share `keep`
of the arrivals is kept, so that the offered rate is trace rate × factor either way.

Which arrivals are kept is deterministic and spread evenly: position p (its place in the
replay, laps counted) is kept when frac((p + 1) · φ⁻¹) < keep, φ the golden ratio. Any run of
N consecutive positions keeps keep · N of them within a few (the golden rotation has the
lowest discrepancy of any), so every minute of the trace keeps its share and the rate's shape
over time is the trace's; a stride (every k-th) would alias with a pattern in the trace's
lengths, and a random draw would cluster. A higher keep keeps a superset of a lower one's, so
`+` only adds arrivals back."""

from __future__ import annotations

import math
from dataclasses import replace

from workloads.trace_records import Trace

CLOCK_FLOOR = 0.125         # the slowest trace clock; below it, arrivals are thinned
MIN_KEEP = 1 / 64           # the smallest share of arrivals kept
MIN_FACTOR = CLOCK_FLOOR * MIN_KEEP
MAX_FACTOR = 64.0           # the fastest clock
_ROTATION = (math.sqrt(5.0) - 1.0) / 2.0


def bounded_factor(factor: float) -> float:
    """The factor within what a replay can offer."""
    return min(max(factor, MIN_FACTOR), MAX_FACTOR)


def clock_and_keep(factor: float) -> tuple[float, float]:
    """(clock speed, share of arrivals kept) whose product is the factor (at least MIN_FACTOR;
    a clock above MAX_FACTOR is left to whoever asked for it: the tests' instant replays)."""
    clock = max(factor, CLOCK_FLOOR)
    return clock, min(max(factor / clock, MIN_KEEP), 1.0)


def kept(position: int, keep: float) -> bool:
    """Whether the arrival at this position of the replay is kept at this share."""
    return keep >= 1.0 or ((position + 1) * _ROTATION) % 1.0 < keep


def kept_between(start: int, end: int, keep: float) -> int:
    """How many of the positions start … end − 1 are kept."""
    if keep >= 1.0:
        return max(end - start, 0)
    return sum(kept(p, keep) for p in range(start, end))


def thin(trace: Trace, keep: float) -> Trace:
    """The trace's kept arrivals (one lap), at their own times."""
    return replace(trace, requests=tuple(r for p, r in enumerate(trace.requests)
                                         if kept(p, keep)))


def factor_text(factor: float) -> str:
    """ "×0.5", or below the clock's floor "×0.023 (clock ×0.125, 18% of arrivals kept)"."""
    clock, keep = clock_and_keep(factor)
    if keep >= 1.0:
        return f"×{factor:.3g}"
    return f"×{factor:.3g} (clock ×{clock:g}, {keep:.0%} of arrivals kept)"
