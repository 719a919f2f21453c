import pytest

from probe.bench.stats import Spread, compare


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
