import itertools
import random

import numpy as np
import pytest

from probe.common.errors import TraceError
from workloads.buckets import (
    bucket_for,
    evaluate_edges,
    parse_bucket_edges,
    plan_buckets,
    powers_of_two_plan,
)


def _brute_force_padded(lengths: list[int], k: int) -> int:
    """Every set of at most k edges from 1..max (not only lengths that occur)."""
    top = max(lengths)
    best = None
    for size in range(1, k + 1):
        for edges in itertools.combinations(range(1, top + 1), size):
            if edges[-1] < top:
                continue
            padded = sum(min(e for e in edges if e >= x) for x in lengths)
            best = padded if best is None else min(best, padded)
    return best


@pytest.mark.parametrize("seed", range(40))
def test_no_other_choice_of_k_edges_pads_fewer_tokens(seed: int) -> None:
    rng = random.Random(seed)
    lengths = [rng.randint(1, 14) for _ in range(rng.randint(1, 12))]
    k = rng.randint(1, 4)
    plan = plan_buckets(lengths, k)
    assert plan.padded_tokens == _brute_force_padded(lengths, k)
    assert len(plan.edges) <= k
    assert plan.padded_tokens == sum(bucket_for(x, plan.edges) for x in lengths)


def test_plan_figures_are_consistent() -> None:
    lengths = [3, 3, 5, 9, 9, 9, 17]
    plan = plan_buckets(lengths, 2)
    assert plan.real_tokens == sum(lengths)
    assert plan.waste_fraction == pytest.approx((plan.padded_tokens - plan.real_tokens) / plan.padded_tokens)
    assert plan.distinct_shapes_before == 4 and plan.distinct_shapes_after == 2
    assert plan.edges[-1] == 17


def test_enough_buckets_means_no_padding() -> None:
    plan = plan_buckets([5, 1, 5, 7], 10)
    assert plan.edges == (1, 5, 7) and plan.waste_fraction == 0.0


def test_on_a_skewed_distribution_it_beats_powers_of_two() -> None:
    # Most requests just above a power of two: the worst case for power-of-two buckets.
    rng = np.random.default_rng(0)
    lengths = np.concatenate([rng.integers(65, 80, 900), rng.integers(129, 140, 90), [300] * 10])
    powers = powers_of_two_plan(lengths)
    same = plan_buckets(lengths, powers.distinct_shapes_after)
    assert same.padded_tokens < powers.padded_tokens
    assert plan_buckets(lengths, 3).waste_fraction < powers.waste_fraction / 2


def test_large_input_is_planned_exactly_and_quickly() -> None:
    lengths = (np.random.default_rng(1).lognormal(6, 1.2, 30_000).astype(int) + 1)
    plan = plan_buckets(lengths, 4)
    # Any move of one edge to a neighbouring distinct length must not pad fewer tokens.
    distinct = np.unique(lengths).tolist()
    for index, edge in enumerate(plan.edges[:-1]):
        position = distinct.index(edge)
        for neighbour in distinct[max(0, position - 1):position] + distinct[position + 1:position + 2]:
            moved = sorted(set(plan.edges[:index] + (neighbour,) + plan.edges[index + 1:]))
            assert evaluate_edges(lengths, moved).padded_tokens >= plan.padded_tokens


def test_powers_of_two_span_the_lengths() -> None:
    plan = powers_of_two_plan([3, 100, 512, 513])
    assert plan.edges == (4, 8, 16, 32, 64, 128, 256, 512, 1024)
    assert plan.padded_tokens == 4 + 128 + 512 + 1024
    assert plan.distinct_shapes_after == 4


def test_bucket_for() -> None:
    edges = (64, 128, 256)
    assert [bucket_for(x, edges) for x in (1, 64, 65, 256, 300)] == [64, 64, 128, 256, 300]


def test_lengths_above_every_edge_stay_their_own_shape() -> None:
    plan = evaluate_edges([10, 20, 600, 700], (64, 512))
    assert plan.padded_tokens == 64 + 64 + 600 + 700
    assert plan.distinct_shapes_after == 3


def test_parse_bucket_edges() -> None:
    assert parse_bucket_edges("64,128,256") == (64, 128, 256)
    assert parse_bucket_edges(" 256, 64 ,64") == (64, 256)
    for bad in ("", "64,,128", "a,b", "0,64", "-1", "64.5"):
        with pytest.raises(TraceError, match="--buckets"):
            parse_bucket_edges(bad)


@pytest.mark.parametrize("lengths, k", [([], 2), ([1, 0], 2), ([5], 0)])
def test_bad_planner_arguments(lengths: list[int], k: int) -> None:
    with pytest.raises(ValueError):
        plan_buckets(lengths, k)


def _reference_padded(lengths: list[int], k: int) -> int:
    """The textbook O(k·m²) dynamic programme, written plainly."""
    values = sorted(set(lengths))
    count = {v: lengths.count(v) for v in values}
    m = len(values)
    if k >= m:
        return sum(lengths)

    def cost(i: int, j: int) -> int:
        return sum(count[values[t]] * values[j] for t in range(i, j + 1))

    best = [cost(0, j) for j in range(m)]
    for buckets in range(2, k + 1):
        best = [min((best[i - 1] + cost(i, j) for i in range(buckets - 1, j + 1)), default=None)
                if j >= buckets - 1 else None for j in range(m)]
    return best[m - 1]


@pytest.mark.parametrize("seed", range(25))
def test_agrees_with_the_plain_quadratic_programme_on_medium_inputs(seed: int) -> None:
    rng = np.random.default_rng(seed)
    lengths = (rng.lognormal(3.5, 1.0, int(rng.integers(20, 120))).astype(int) + 1).tolist()
    k = int(rng.integers(1, 9))
    assert plan_buckets(lengths, k).padded_tokens == _reference_padded(lengths, k)
