"""A set of values as p50/p95/p99, mean and max, by the one percentile definition
(probe/common/percentile.py: numpy's linear interpolation on the exact values)."""

from __future__ import annotations

from typing import Iterable

import numpy as np

from probe.common.percentile import percentiles
from probe.contract.figures import Summary


def summarize(values: Iterable[float | None]) -> Summary:
    data = np.array([v for v in values if v is not None], dtype=float)
    if data.size == 0:
        return Summary()
    p50, p95, p99 = percentiles(data, (50, 95, 99)) or (0.0, 0.0, 0.0)
    return Summary(float(p50), float(p95), float(p99), float(data.mean()), float(data.max()))
