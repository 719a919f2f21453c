"""Repeated-run statistics for the bench: the median of the repeats and their spread, and an
honest comparison that says "within noise" when two spreads overlap.

A figure of one run (a pass's p50, its tokens/s) is computed in probe/stats.py from the raw
records; here only the repeats of that figure are combined.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

import numpy as np


@dataclass(frozen=True)
class Spread:
    """The median of n repeated measurements and their range (min..max)."""
    median: float | None
    low: float | None
    high: float | None
    n: int

    @classmethod
    def of(cls, values: Iterable[float | None]) -> Spread:
        data = [float(v) for v in values if v is not None]
        if not data:
            return cls(None, None, None, 0)
        return cls(float(np.median(data)), min(data), max(data), len(data))

    @classmethod
    def from_dict(cls, raw: dict | None) -> Spread:
        raw = raw or {}
        return cls(raw.get("median"), raw.get("low"), raw.get("high"), int(raw.get("n", 0)))

    def as_dict(self) -> dict:
        return {"median": self.median, "low": self.low, "high": self.high, "n": self.n}

    @property
    def relative_spread(self) -> float | None:
        """(max − min) / median: how far apart the repeats were."""
        if self.n < 2 or not self.median:
            return None
        return (self.high - self.low) / abs(self.median)


@dataclass(frozen=True)
class Comparison:
    ratio: float | None          # a / b of the medians
    verdict: str                 # "faster" | "slower" | "within noise" | "noise unknown" | "n/a"
    text: str


def overlaps(a: Spread, b: Spread) -> bool:
    return a.low <= b.high and b.low <= a.high


def compare(a: Spread, b: Spread, *, lower_is_better: bool = True,
            better: str = "faster", worse: str = "slower") -> Comparison:
    """How `a` stands against `b`. With two or more repeats each, overlapping ranges are
    reported as within noise, whatever the medians say. With a single repeat on either side the
    difference is reported, marked as of unknown noise."""
    if a.median is None or b.median is None or b.median == 0 or a.median == 0:
        return Comparison(None, "n/a", "n/a")
    ratio = a.median / b.median
    factor = (1 / ratio) if lower_is_better else ratio     # > 1: a is better
    if a.n >= 2 and b.n >= 2 and overlaps(a, b):
        return Comparison(ratio, "within noise", f"within noise ({_factor_text(factor, better, worse)} by the medians)")
    text = _factor_text(factor, better, worse)
    if a.n < 2 or b.n < 2:
        return Comparison(ratio, "noise unknown", f"{text} (one repeat: noise not measured)")
    return Comparison(ratio, better if factor > 1 else worse, text)


def _factor_text(factor: float, better: str, worse: str) -> str:
    if factor >= 1:
        return f"{factor:.2f}× {better}"
    return f"{1 / factor:.2f}× {worse}"


def percentiles(values: Iterable[float | None], qs: tuple[float, ...] = (50, 95)) -> tuple[float | None, ...]:
    data = np.array([v for v in values if v is not None], dtype=float)
    if data.size == 0:
        return tuple(None for _ in qs)
    return tuple(float(x) for x in np.percentile(data, qs))
