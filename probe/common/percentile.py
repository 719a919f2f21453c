"""The one percentile definition of every figure: numpy's linear interpolation between the
closest ranks, on the exact values, never from histograms. The median is its 50th percentile
(the mean of the two middle values of an even count, not the upper one). Here, at the bottom
layer, so that the traces' statistics (workloads) and the figures (probe/analysis) share it."""

from __future__ import annotations

from typing import Iterable, Sequence

import numpy as np


def percentiles(values: Iterable[float | None], qs: Sequence[float]) -> tuple[float, ...] | None:
    """The `qs` (0–100) percentiles of the values given (None skipped); None when none is."""
    data = (values.astype(float) if isinstance(values, np.ndarray)
            else np.array([v for v in values if v is not None], dtype=float))
    if data.size == 0:
        return None
    return tuple(float(v) for v in np.percentile(data, list(qs)))


def percentile(values: Iterable[float | None], q: float) -> float | None:
    found = percentiles(values, (q,))
    return None if found is None else found[0]


def median(values: Iterable[float | None]) -> float | None:
    return percentile(values, 50)
