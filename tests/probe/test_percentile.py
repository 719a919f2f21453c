"""The one percentile definition: numpy's linear interpolation on the exact values, and every
percentile and median of the product computed through it."""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import import_graph
from probe.analysis.summary import summarize
from probe.common.percentile import median, percentile, percentiles

values = st.lists(st.floats(min_value=-1e6, max_value=1e6), min_size=1, max_size=50)


@given(values, st.floats(min_value=0.0, max_value=100.0))
def test_a_percentile_is_the_linear_interpolation_between_the_closest_ranks(data, q):
    ordered = sorted(data)
    rank = q / 100 * (len(ordered) - 1)
    low, high = ordered[int(np.floor(rank))], ordered[int(np.ceil(rank))]
    expected = low + (high - low) * (rank - np.floor(rank))
    assert percentile(data, q) == pytest.approx(expected, rel=1e-9, abs=1e-6)


@given(values)
def test_the_median_of_an_even_count_is_the_mean_of_the_middle_two_and_summarize_agrees(data):
    ordered = sorted(data)
    middle = len(ordered) // 2
    expected = (ordered[middle] if len(ordered) % 2
                else (ordered[middle - 1] + ordered[middle]) / 2)
    assert median(data) == pytest.approx(expected, rel=1e-9, abs=1e-6)
    summary = summarize(data)
    assert (summary.p50, summary.p95, summary.p99) == percentiles(data, (50, 95, 99))


def test_nothing_given_has_no_percentile():
    assert percentile([], 50) is None and median([None]) is None


BYPASS = re.compile(r"np\.(percentile|quantile|median|nanpercentile)\(|statistics\.(median|quantiles)"
                    r"\(|sorted\([^)]*\)\[(int\(|len\()")


def test_every_percentile_of_the_product_goes_through_the_one_function():
    found = [f"{name}: {line.strip()}"
             for name, path in import_graph.module_files().items()
             if name != "probe.common.percentile"
             for line in path.read_text(encoding="utf-8").splitlines()
             if BYPASS.search(line)]
    assert not found, "percentiles computed outside probe/common/percentile.py:\n" + "\n".join(found)
