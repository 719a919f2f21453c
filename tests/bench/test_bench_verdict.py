"""Spreads of repeats and the verdicts drawn from them."""

from dataclasses import replace

import pytest

from probe.runs.results import FailedRun
from probe.runs.spread import Spread
from probe.runs.verdict import compare, failed_text, machine_drift, versus


def test_spread_is_median_and_range() -> None:
    s = Spread.of([12.0, 10.0, None, 11.0])
    assert (s.median, s.low, s.high, s.n) == (11.0, 10.0, 12.0, 3)
    assert s.relative_spread == pytest.approx(2 / 11)
    assert Spread.from_dict(s.as_dict()) == s
    assert Spread.of([]).median is None


@pytest.mark.parametrize("a, b, verdict", [
    ([10, 11, 12], [20, 21, 22], "faster"),
    ([20, 21, 22], [10, 11, 12], "slower"),
    ([10, 15, 20], [12, 13, 14], "within noise"),   # ranges overlap, whatever the medians say
    ([10], [20], "noise unknown"),                    # one repeat: cannot tell
])
def test_compare_reports_overlap_as_noise(a, b, verdict) -> None:
    result = compare(Spread.of(a), Spread.of(b))
    assert result.verdict == verdict
    assert result.ratio == pytest.approx(float(sorted(a)[len(a) // 2]) / sorted(b)[len(b) // 2])


def test_compare_higher_is_better_for_throughput() -> None:
    result = compare(Spread.of([100, 101]), Spread.of([50, 51]), lower_is_better=False)
    assert result.verdict == "faster" and result.text.startswith("1.99× faster")  # 100.5 / 50.5


def test_compare_without_data_is_na() -> None:
    assert compare(Spread.of([]), Spread.of([1, 2])).verdict == "n/a"


def test_a_difference_inside_the_machines_drift_is_noise(make_result) -> None:
    fast = make_result(pass_latencies=[[100.0], [101.0]])
    slow = make_result(pass_latencies=[[160.0], [161.0]])
    assert versus(fast, slow).verdict == "faster"
    fast, slow = (replace(fast, calibration_ms=(10.0, 12.0)),
                  replace(slow, calibration_ms=(11.0, 12.0)))             # 1.2×: ignored
    assert versus(fast, slow).verdict == "faster"
    fast, slow = (replace(fast, calibration_ms=(10.0, 10.5)),
                  replace(slow, calibration_ms=(18.0, 18.9)))             # 1.8× drift
    against = versus(fast, slow)
    assert against.verdict == "within noise" and "1.80×" in against.text
    fast, slow = (replace(fast, calibration_ms=(3.1, 3.1, 3.2, 3.1, 5.9)),   # one slow sample
                  replace(slow, calibration_ms=(6.7, 3.1, 3.1, 3.0, 3.0)))   # at each edge
    assert versus(fast, slow).verdict == "faster"
    fast, slow = replace(fast, group="pair"), replace(slow, group="pair")
    assert versus(fast, slow).verdict == "faster"     # interleaved on one engine: drift cancels


def test_drift_is_read_from_each_runs_fastest_calibration(make_result) -> None:
    fast = make_result(pass_latencies=[[100.0], [101.0]])
    slow = make_result(pass_latencies=[[130.0], [131.0]])       # 1.3×, inside a 1.57× drift
    loaded = (replace(fast, calibration_ms=(3.0, 3.1, 3.2)),    # a load the whole run long
              replace(slow, calibration_ms=(4.7, 4.8, 4.9)))
    assert machine_drift(*loaded) == pytest.approx(4.7 / 3.0)
    assert versus(*loaded).verdict == "within noise"
    moments = (replace(fast, calibration_ms=(2.33, 2.33, 2.35)),          # E1, 2-core Zen 4:
               replace(slow, calibration_ms=(3.29, 3.39, 2.37, 3.05)))    # medians 1.36× apart
    assert machine_drift(*moments) == pytest.approx(2.37 / 2.33)
    assert versus(*moments).verdict == "faster"


def test_runs_that_failed_or_lost_requests_are_not_comparable(make_result) -> None:
    ok = make_result(pass_latencies=[[100.0], [101.0]])
    lost = replace(ok, failed=1, errors=("RuntimeError: out of memory",))
    crashed = FailedRun("k", "baseline", "RuntimeError: boom", "")
    assert failed_text(ok) is None and failed_text(None) == "not run"
    assert failed_text(lost) == "not comparable: 1 requests failed (RuntimeError: out of memory)"
    assert failed_text(crashed) == "run failed: RuntimeError: boom"
    assert versus(ok, lost).verdict == versus(crashed, ok).verdict == "not comparable"
