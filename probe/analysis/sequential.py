"""An always-valid confidence sequence for the mean of a stream, and the three-way verdict a
bench run's stopping rule reads from it. Pure: numbers in, numbers out.

The method: Robbins' normal-mixture boundary (Robbins 1970; the two-sided form of Howard,
Ramdas, McAuliffe & Sekhon 2021, "Time-uniform, nonparametric, nonasymptotic confidence
sequences", eq. 14), with the running sample variance plugged in for the unknown variance,
which makes it an *asymptotic* confidence sequence (Waudby-Smith, Arnold, Wu, Howard & Ramdas,
"Time-uniform central limit theory and asymptotic confidence sequences", Ann. Stat. 2024).
For sub-Gaussian increments of variance σ², the mixture of exp(λS_t − λ²tσ²/2) over
λ ~ N(0, 1/ρσ²) is a nonnegative martingale; Ville's inequality then gives, with probability at
least 1 − α, at every t at once:

    |mean_t − μ| ≤ σ · sqrt((t + ρ) · log((t + ρ) / (ρ α²))) / t

so the interval may be read after every observation and a run stopped on what it says, with no
peeking bias. ρ (RHO, in units of σ²) sets where the boundary is tightest: about tens to a few
hundred observations, a run's steady passes. The interval starts only after BURN_IN
observations (before them the variance is not known well enough to plug in), and the running
intersection is kept (an intersection of confidence sequences is one), so intervals nest, until
the running mean leaves it (the stream drifted): it then starts again from the current interval.

The verdict on the mean of log(latency ratio) (lower is better), with a margin w = log(1 +
MARGIN) that is the study's stated width: "faster" once the interval lies below −w, "slower"
once above +w, "within noise" once it lies inside [−w, +w] (any difference is smaller than the
margin), else "no difference yet". The three regions are disjoint, so a nested interval that has
entered one never leaves it: a verdict reached early is the verdict a longer run would reach
(with probability 1 − α per comparison).

Written here rather than taken from `confseq`, the method's authors' package: it is published
only as a source archive that needs a C++ toolchain to install (no wheel on the registry), and
the boundary itself is the one line of `radius`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable

ALPHA = 0.05            # the chance the sequence ever misses the mean, over the whole run
RHO = 10.0              # the mixture's precision, in observations (where it is tightest)
BURN_IN = 20            # observations before the first interval (fewer: the plugged-in
                        # variance is too often low; measured in tests/probe/test_sequential.py)
MARGIN = 0.10           # the stated width: differences under 10% are called within noise.
# Not 5%: the interval sees the noise between requests, not between runs. Over three E1
# studies (t5-small, quiet 2-core Zen 3 VM) reduce-overhead against default came out ×0.93,
# ×1.02, ×1.05 and max-autotune against default ×1.01, ×1.12, ×0.94, each interval about ±2–3%:
# at 5% three of the six were called faster or slower, two of them opposite ways.


FASTER, SLOWER, WITHIN, UNDECIDED = "faster", "slower", "within noise", "no difference yet"


@dataclass(frozen=True)
class Interval:
    """The confidence sequence after `n` observations: their mean and the running interval."""
    n: int
    mean: float
    lo: float
    hi: float

    @property
    def half_width(self) -> float:
        return (self.hi - self.lo) / 2

    def as_dict(self) -> dict:
        return {"n": self.n, "mean": self.mean, "lo": _finite(self.lo), "hi": _finite(self.hi)}


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


def radius(n: int, variance: float, *, alpha: float = ALPHA, rho: float = RHO) -> float:
    """The normal-mixture boundary on the mean after n observations of this variance."""
    if n <= 0:
        return math.inf
    return math.sqrt(max(variance, 0.0) * (n + rho) * math.log((n + rho) / (rho * alpha ** 2))) / n


def confidence_sequence(values: Iterable[float], *, alpha: float = ALPHA, rho: float = RHO,
                        burn_in: int = BURN_IN) -> list[Interval]:
    """The interval after each observation (infinite before `burn_in` of them)."""
    out: list[Interval] = []
    n, mean, m2 = 0, 0.0, 0.0
    lo, hi = -math.inf, math.inf
    for x in values:
        n += 1
        delta = x - mean                # Welford: a stable running mean and variance
        mean += delta / n
        m2 += delta * (x - mean)
        if n >= burn_in:
            r = radius(n, m2 / (n - 1), alpha=alpha, rho=rho)
            lo, hi = max(lo, mean - r), min(hi, mean + r)
            if not lo <= mean <= hi:
                # the intersection emptied, or no longer holds the running mean: the stream
                # drifted (E1's fixed warm study on t5-small: ×1.12–×1.12 around a mean of
                # ×1.10 after three passes that moved). Start again from the current
                # interval: one member of the sequence, as valid, and wider.
                lo, hi = mean - r, mean + r
        out.append(Interval(n, mean, lo, hi))
    return out


def last_interval(values: Iterable[float], **kwargs) -> Interval | None:
    intervals = confidence_sequence(values, **kwargs)
    return intervals[-1] if intervals else None


def margin_log(margin: float = MARGIN) -> float:
    return math.log1p(margin)


def decide(interval: Interval | None, margin: float = MARGIN) -> str:
    """faster / slower / within noise / no difference yet, from an interval on the mean log
    ratio (this over the other: below 0 is faster). See the module's docstring."""
    if interval is None or not math.isfinite(interval.lo) or not math.isfinite(interval.hi):
        return UNDECIDED
    w = margin_log(margin)
    if interval.hi < -w:
        return FASTER
    if interval.lo > w:
        return SLOWER
    if -w <= interval.lo and interval.hi <= w:
        return WITHIN
    return UNDECIDED


def distance_to_decide(interval: Interval, margin: float = MARGIN) -> float:
    """How far the mean is from the nearest edge of the margin: the interval's half-width must
    fall under this for a verdict."""
    w = margin_log(margin)
    return min(abs(interval.mean - w), abs(interval.mean + w))
