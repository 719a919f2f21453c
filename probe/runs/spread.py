"""The repeats of one figure: their median and range. A figure of one pass (its p50, its
tokens/s) is computed in probe/analysis/stats.py from the raw records; here only its repeats combine."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Iterable

from probe.common.percentile import median
from probe.common.units import NO_DATA, fmt_ms


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
        return cls(median(data), min(data), max(data), len(data))

    @classmethod
    def from_dict(cls, raw: dict | None) -> Spread:
        raw = raw or {}
        return cls(raw.get("median"), raw.get("low"), raw.get("high"), int(raw.get("n", 0)))

    def as_dict(self) -> dict:
        return asdict(self)

    @property
    def relative_spread(self) -> float | None:
        """(max − min) / median: how far apart the repeats were."""
        if self.n < 2 or not self.median or self.high is None or self.low is None:
            return None
        return (self.high - self.low) / abs(self.median)

    def overlaps(self, other: Spread) -> bool:
        """Two measured ranges overlap; an empty spread overlaps nothing."""
        if self.low is None or self.high is None or other.low is None or other.high is None:
            return False
        return self.low <= other.high and other.low <= self.high


NO_SPREAD = Spread(None, None, None, 0)


def fmt_spread(raw: dict | Spread | None, render=fmt_ms) -> str:
    """`12.3 ms (11.9–12.8 ms)`: the median of the repeats, then their range; one repeat alone."""
    value = raw if isinstance(raw, Spread) else Spread.from_dict(raw)
    if value.median is None:
        return NO_DATA
    if value.n < 2:
        return render(value.median)
    return f"{render(value.median)} ({_bare(render(value.low))}–{render(value.high)})"


def _bare(text: str) -> str:
    return text.rsplit(" ", 1)[0] if " " in text else text
