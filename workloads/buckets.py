"""Padding buckets: the exact best K edges for a set of input lengths, and their cost.

Each request is padded to the smallest edge >= its length, so each edge is one compiled shape.
An optimal edge set only ever uses lengths that occur (lowering an edge to the longest length
it covers pads less), so the search runs over the sorted distinct lengths: a dynamic programme
over "the last bucket ends at distinct length j", in exact integer arithmetic.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from typing import Sequence, TypeAlias

import numpy as np

from probe.common.errors import file_error
from probe.common.shown import shown
from workloads.rows import MAX_LENGTH

# request lengths, as a list or a numpy array (trace_stats hands arrays)
Lengths: TypeAlias = Sequence[int] | np.ndarray


@dataclass(frozen=True)
class BucketPlan:
    edges: tuple[int, ...]
    real_tokens: int
    padded_tokens: int  # sum of padded lengths
    waste_fraction: float  # (padded - real) / padded
    distinct_shapes_before: int
    distinct_shapes_after: int

    @property
    def waste_pct(self) -> float:
        return 100.0 * self.waste_fraction


def bucket_for(length: int, edges: Sequence[int]) -> int:
    """The smallest edge >= length; a length above every edge is returned unchanged."""
    index = bisect.bisect_left(edges, length)
    return edges[index] if index < len(edges) else length


def evaluate_edges(lengths: Lengths, edges: Sequence[int]) -> BucketPlan:
    values = _lengths_array(lengths)
    edge_array = np.array(sorted(set(int(e) for e in edges)), dtype=np.int64)
    if edge_array.size == 0:
        return _plan((), values, values)
    index = np.searchsorted(edge_array, values, side="left")
    covered = index < edge_array.size
    padded = np.where(covered, edge_array[np.minimum(index, edge_array.size - 1)], values)
    return _plan(tuple(edge_array.tolist()), values, padded)


def plan_buckets(lengths: Lengths, k: int) -> BucketPlan:
    """The K edges (or fewer, if fewer distinct lengths) that minimise total padded tokens. Exact."""
    if k < 1:
        raise ValueError(f"need at least one bucket, got k={k}")
    values = _lengths_array(lengths)
    distinct, counts = np.unique(values, return_counts=True)
    if k >= len(distinct):
        return evaluate_edges(values, distinct.tolist())
    edges = _optimal_edges(distinct, counts, k)
    return evaluate_edges(values, edges)


def powers_of_two_plan(lengths: Lengths) -> BucketPlan:
    """Edges 2^a .. 2^b spanning the lengths: the usual fixed bucket set."""
    values = _lengths_array(lengths)
    low = int(values.min() - 1).bit_length()  # smallest a with 2^a >= min
    high = int(values.max() - 1).bit_length()
    return evaluate_edges(values, [1 << e for e in range(low, high + 1)])


def parse_bucket_edges(text: str) -> tuple[int, ...]:
    """"64,128,256" -> (64, 128, 256), sorted, duplicates removed. TraceError naming --buckets."""
    parts = [p.strip() for p in text.split(",")]
    try:
        edges = [int(p) for p in parts]
    except ValueError:
        edges = []
    if not edges or any(not 1 <= e <= MAX_LENGTH for e in edges):
        raise file_error(
            f"--buckets: expected comma-separated whole numbers from 1 to {MAX_LENGTH:,}, like "
            f"64,128,256, got {shown(text)}"
        )
    return tuple(sorted(set(edges)))


def _lengths_array(lengths: Lengths) -> np.ndarray:
    values = np.asarray(lengths, dtype=np.int64)
    if values.size == 0:
        raise ValueError("no lengths to bucket")
    if values.min() <= 0:
        raise ValueError(f"lengths must be positive, got {int(values.min())}")
    return values


def _plan(edges: tuple[int, ...], values: np.ndarray, padded: np.ndarray) -> BucketPlan:
    real = int(values.sum())
    total = int(padded.sum())
    return BucketPlan(
        edges=edges,
        real_tokens=real,
        padded_tokens=total,
        waste_fraction=(total - real) / total,
        distinct_shapes_before=int(np.unique(values).size),
        distinct_shapes_after=int(np.unique(padded).size),
    )


def _optimal_edges(distinct: np.ndarray, counts: np.ndarray, k: int) -> list[int]:
    """best[b][j]: least padding for distinct[0..j] with b buckets, the last ending at j.

    Padding of one bucket covering distinct[i..j] = distinct[j] * (requests in i..j)
    - (tokens in i..j), from prefix sums; integers throughout, so the minimum is exact.
    """
    m = len(distinct)
    count_prefix = np.concatenate(([0], np.cumsum(counts)))
    token_prefix = np.concatenate(([0], np.cumsum(counts * distinct)))
    best = distinct * count_prefix[1:] - token_prefix[1:]  # one bucket over 0..j
    starts_of_last = [np.zeros(m, dtype=np.int64)]
    for buckets in range(2, k + 1):
        best, start = _next_layer(best, distinct, count_prefix, token_prefix, buckets)
        starts_of_last.append(start)
    edges = []
    end = m - 1
    for buckets in range(k, 0, -1):
        edges.append(int(distinct[end]))
        end = int(starts_of_last[buckets - 1][end]) - 1
    return sorted(edges)


def _next_layer(
    previous: np.ndarray, distinct: np.ndarray, count_prefix: np.ndarray, token_prefix: np.ndarray, buckets: int
) -> tuple[np.ndarray, np.ndarray]:
    """One DP layer: for each end j, the best start i of the last bucket (buckets-1 <= i <= j).

    The cost is a Monge array (for i1 < i2 <= j1 < j2, moving the split from i1 to i2 helps the
    longer bucket at least as much, because distinct[j2] >= distinct[j1]), so the leftmost best
    start never decreases as j grows. Divide and conquer on j with that bound visits
    O(m log m) cells instead of m^2 and returns the same minimum; each recursion level is
    evaluated for all its sub-problems at once.
    """
    m = len(distinct)
    best = np.full(m, np.iinfo(np.int64).max, dtype=np.int64)
    start = np.zeros(m, dtype=np.int64)
    low = buckets - 1
    # Pending sub-problems: ends j in [j_lo, j_hi], starts in [i_lo, i_hi].
    j_lo, j_hi = np.array([low]), np.array([m - 1])
    i_lo, i_hi = np.array([low]), np.array([m - 1])
    while j_lo.size:
        j = (j_lo + j_hi) // 2
        top = np.minimum(i_hi, j)
        sizes = top - i_lo + 1
        offsets = np.concatenate(([0], np.cumsum(sizes)[:-1]))
        owner = np.repeat(np.arange(j.size), sizes)
        i = i_lo[owner] + (np.arange(int(sizes.sum())) - offsets[owner])
        jj = j[owner]
        cost = (
            previous[i - 1]
            + distinct[jj] * (count_prefix[jj + 1] - count_prefix[i])
            - (token_prefix[jj + 1] - token_prefix[i])
        )
        minimum = np.minimum.reduceat(cost, offsets)
        hits = np.flatnonzero(cost == minimum[owner])
        chosen = i[hits[np.searchsorted(hits, offsets)]]  # leftmost best start per sub-problem
        best[j] = minimum
        start[j] = chosen
        left = j_lo <= j - 1
        right = j + 1 <= j_hi
        j_lo = np.concatenate((j_lo[left], (j + 1)[right]))
        j_hi = np.concatenate(((j - 1)[left], j_hi[right]))
        i_lo = np.concatenate((i_lo[left], chosen[right]))
        i_hi = np.concatenate((chosen[left], i_hi[right]))
    return best, start
