"""The confidence sequence keeps its promise when read after every observation, and its verdict
regions are stable under the nesting it keeps."""

from __future__ import annotations

import math
import random

from hypothesis import given, settings
from hypothesis import strategies as st

from probe.analysis.sequential import (
    ALPHA,
    FASTER,
    SLOWER,
    UNDECIDED,
    WITHIN,
    Interval,
    confidence_sequence,
    decide,
    margin_log,
)

STREAMS, STEPS = 200, 200
# the Monte-Carlo error of a miss rate over 200 streams at α = 0.05 is about 0.015
SLACK = 0.045


def _miss_rate(draw, mean: float, seed: int) -> float:
    """The share of streams whose interval, read after every step, ever excluded the mean."""
    rng = random.Random(seed)
    missed = 0
    for _ in range(STREAMS):
        intervals = confidence_sequence([draw(rng) for _ in range(STEPS)])
        missed += any(not (i.lo <= mean <= i.hi) for i in intervals)
    return missed / STREAMS


@settings(max_examples=6, deadline=None)
@given(mean=st.floats(-1, 1), sd=st.floats(0.01, 0.5), seed=st.integers(0, 2 ** 16))
def test_normal_streams_miss_at_most_alpha_when_checked_every_step(mean, sd, seed):
    assert _miss_rate(lambda rng: rng.gauss(mean, sd), mean, seed) <= ALPHA + SLACK


@settings(max_examples=4, deadline=None)
@given(sd=st.floats(0.01, 0.5), seed=st.integers(0, 2 ** 16))
def test_heavy_tailed_streams_miss_at_most_alpha(sd, seed):
    def student_t3(rng):      # a latency ratio's bursts: heavier tails than a normal's
        chi = sum(rng.gauss(0, 1) ** 2 for _ in range(3)) / 3
        return sd * rng.gauss(0, 1) / math.sqrt(chi)
    assert _miss_rate(student_t3, 0.0, seed) <= ALPHA + SLACK


def test_the_interval_narrows_and_nests():
    rng = random.Random(0)
    intervals = confidence_sequence([rng.gauss(0.0, 0.1) for _ in range(400)])
    finite = [i for i in intervals if math.isfinite(i.lo)]
    assert all(b.lo >= a.lo and b.hi <= a.hi for a, b in zip(finite, finite[1:]))
    assert finite[-1].half_width < finite[0].half_width / 3


@given(lo=st.floats(-1, 1), width=st.floats(0, 1), cut_lo=st.floats(0, 1),
       cut_hi=st.floats(0, 1))
def test_a_verdict_reached_stays_for_every_narrower_interval(lo, width, cut_lo, cut_hi):
    outer = Interval(10, lo + width / 2, lo, lo + width)
    inner_lo = lo + width * cut_lo / 2
    inner_hi = lo + width - width * cut_hi / 2
    inner = Interval(20, (inner_lo + inner_hi) / 2, inner_lo, inner_hi)
    if decide(outer) != UNDECIDED:
        assert decide(inner) == decide(outer)


def test_the_three_regions():
    w = margin_log()
    assert decide(Interval(50, -0.5, -0.6, -0.4)) == FASTER
    assert decide(Interval(50, 0.5, 0.4, 0.6)) == SLOWER
    assert decide(Interval(50, 0.0, -w / 2, w / 2)) == WITHIN
    assert decide(Interval(50, 0.0, -0.2, 0.2)) == UNDECIDED
    assert decide(Interval(5, 0.0, -math.inf, math.inf)) == UNDECIDED


def test_an_intersection_the_running_mean_has_left_starts_again():
    """A stream whose level moves (a machine that changed between passes): the kept
    intersection would settle on a narrow interval the mean is no longer in."""
    rng = random.Random(1)
    values = [rng.gauss(0.0, 0.02) for _ in range(60)] + [rng.gauss(0.15, 0.02) for _ in range(60)]
    last = confidence_sequence(values)[-1]
    assert last.lo <= last.mean <= last.hi
