"""The A/B comparison of `doctor --verify` on synthetic arms whose answer is known: a clear
shift is told in its direction, identical arms are not told apart, and on a large sample the
interval holds the true delta. Each figure is recomputed here with numpy, not with the module."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from probe.analysis.ab_compare import (
    BETTER,
    UNDECIDED,
    WORSE,
    MetricDelta,
    compare,
    judge,
    laid_end_to_end,
    requests_to_tell,
)
from probe.analysis.span import serving_span_s
from probe.contract.objective import Slo
from tests.probe.doctor_records import record

FAST = 400      # resamples in these tests: the verdicts below are far from their edges


def arm(latencies_ms, *, t0: float = 0.0, config_id: str = "c1"):
    """One request per latency, 1 s apart, all of it decode."""
    return [record(i, arrival_s=t0 + i, encode_s=0.0, decode_s=ms / 1000, config_id=config_id)
            for i, ms in enumerate(latencies_ms)]


def p95(values) -> float:
    return float(np.percentile(np.asarray(values, dtype=float), 95))


@settings(max_examples=12, deadline=None)
@given(seed=st.integers(0, 2**16), n=st.integers(20, 60), sign=st.sampled_from([-1, 1]))
def test_a_clear_shift_is_told_in_its_direction(seed, n, sign):
    rng = np.random.default_rng(seed)
    base = rng.uniform(90.0, 110.0, size=n)
    shifted = base + sign * 200.0         # far beyond the 20 ms spread of either arm
    c = compare(arm(base), arm(shifted), resamples=FAST)
    m = c.metrics["p95_ms"]
    assert m.delta is not None and math.isclose(m.delta, p95(shifted) - p95(base))
    assert c.verdict == (WORSE if sign > 0 else BETTER)
    assert c.requests_to_tell is None
    assert (c.requests_a, c.requests_b) == (n, n)


@settings(max_examples=12, deadline=None)
@given(latencies=st.lists(st.floats(1.0, 5000.0), min_size=2, max_size=40),
       seed=st.integers(0, 2**16))
def test_identical_arms_are_no_difference_yet(latencies, seed):
    order = np.random.default_rng(seed).permutation(len(latencies))
    c = compare(arm(latencies), arm([latencies[i] for i in order]), resamples=FAST)
    m = c.metrics["p95_ms"]
    assert m.delta is not None and abs(m.delta) < 1e-6 * max(latencies)
    assert m.ci95 is not None and m.ci95[0] <= 0 <= m.ci95[1]
    assert c.verdict == UNDECIDED


def test_arms_drawn_alike_say_how_many_requests_would_tell():
    rng = np.random.default_rng(7)
    a, b = rng.lognormal(5.0, 0.4, 30), rng.lognormal(5.0, 0.4, 30)
    c = compare(arm(a), arm(b), resamples=FAST)
    m = c.metrics["p95_ms"]
    assert c.verdict == UNDECIDED
    lo, hi = m.ci95
    expected = math.ceil(30 * ((hi - lo) / 2 / abs(p95(b) - p95(a))) ** 2)
    assert c.requests_to_tell == max(expected, 30)


def test_on_a_large_sample_the_interval_holds_the_true_delta():
    # every request of B is its A twin plus 40 ms: the true p95 delta is exactly 40 ms
    rng = np.random.default_rng(11)
    a = rng.lognormal(5.0, 0.3, 600)
    b = rng.permutation(a) + 40.0
    c = compare(arm(a), arm(b), resamples=FAST)
    lo, hi = c.metrics["p95_ms"].ci95
    assert lo <= 40.0 <= hi
    assert c.verdict == WORSE


def test_goodput_is_better_when_higher_and_follows_the_slo():
    slo = Slo(latency_ms=150.0)
    a = arm([100.0] * 10 + [200.0] * 10)          # half outside the objective
    b = arm([100.0] * 20)
    c = compare(a, b, slo=slo, resamples=FAST)
    g = c.metrics["goodput_rps"]
    span = serving_span_s(a)
    assert math.isclose(g.a, 10 / span) and math.isclose(g.b, 20 / serving_span_s(b))
    assert judge(g, lower_is_better=False) == BETTER
    assert "goodput_rps" not in compare(a, b, resamples=FAST).metrics   # no SLO, no goodput


def test_compile_seconds_are_shown_without_an_interval():
    c = compare(arm([100.0] * 5), arm([90.0] * 5), compile_s_a=3.0, compile_s_b=1.0,
                resamples=FAST)
    assert c.metrics["compile_s"].as_dict() == {"a": 3.0, "b": 1.0, "delta": -2.0, "ci95": None}


def test_requests_to_tell_is_n_times_the_squared_ratio():
    metric = MetricDelta(100.0, 110.0, (-5.0, 25.0))       # half-width 15, delta 10
    assert requests_to_tell(metric, 24) == math.ceil(24 * 1.5 ** 2)
    assert requests_to_tell(MetricDelta(100.0, 100.0, (-5.0, 5.0)), 24) is None


def test_passes_laid_end_to_end_add_their_spans_and_keep_each_latency():
    first, second = arm([100.0, 300.0]), arm([50.0, 80.0, 70.0])  # both start at 0 s
    laid = laid_end_to_end([first, second])
    assert math.isclose(serving_span_s(laid), serving_span_s(first) + serving_span_s(second))
    assert [r.latency_ms for r in laid] == [r.latency_ms for r in first + second]
    assert all(r.start_s >= max(f.end_s for f in first) - 1e-9 for r in laid[2:])


@given(st.lists(st.floats(0, 1e6, allow_nan=False) | st.none(), min_size=3, max_size=3))
def test_the_ab_table_keeps_every_figure_apart(values):
    """`doctor --verify` printed "6.96 req/s28.3 req/s": a figure as wide as its column."""
    from probe.analysis.ab_compare import Comparison, MetricDelta
    from probe.analysis.ab_table import comparison_lines, figure_text
    a, b, _ = values
    metrics = {name: MetricDelta(a, b) for name in ("goodput_rps", "kv_peak_bytes", "p95_ms")}
    lines = comparison_lines(Comparison(3, 3, metrics, "no difference yet", None))
    for name in metrics:
        line = next(line for line in lines if line.strip().startswith(name))
        assert f"{figure_text(name, a)}  " in line and f"  {figure_text(name, b)}" in line
