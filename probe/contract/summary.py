"""A set of values as p50/p95/p99, mean and max: numpy's percentiles (linear interpolation) on
the exact values, never from histograms. The one percentile definition of every figure."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

import numpy as np


@dataclass(frozen=True)
class Summary:
    p50: float | None = None
    p95: float | None = None
    p99: float | None = None
    mean: float | None = None
    max: float | None = None

    def as_dict(self) -> dict[str, float | None]:
        return {"p50": self.p50, "p95": self.p95, "p99": self.p99, "mean": self.mean,
                "max": self.max}


def summarize(values: Iterable[float | None]) -> Summary:
    data = np.array([v for v in values if v is not None], dtype=float)
    if data.size == 0:
        return Summary()
    p50, p95, p99 = np.percentile(data, [50, 95, 99])
    return Summary(float(p50), float(p95), float(p99), float(data.mean()), float(data.max()))
