"""What a warm switch's side compile costs the serving config: TPOT during against before."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given
from hypothesis import strategies as st

from probe.analysis.side_compile_cost import BEFORE_REQUESTS, side_compile_cost
from tests.probe.doctor_records import record


def served(tpots_ms: list[float], first_s: float, *, config_id: str = "c1", stall_ms: float = 0):
    """One request a second from `first_s`, each with its TPOT."""
    return [replace(record(i, arrival_s=first_s + i, config_id=config_id, stall_ms=stall_ms),
                    tpot_ms=t) for i, t in enumerate(tpots_ms)]


def test_the_slowdown_is_the_median_tpot_during_over_before():
    records = served([40.0, 40.0, 44.0], 0.0) + served([80.0, 88.0, 72.0], 10.0)
    cost = side_compile_cost(records, "c1", since_s=10.0, until_s=20.0)
    assert cost is not None
    assert (cost.tpot_before_ms, cost.tpot_during_ms) == (40.0, 80.0)
    assert cost.slowdown == 2.0 and (cost.before, cost.during) == (3, 3)
    assert "serving slowed 2.0× by the side compile (TPOT 40→80 ms)" in cost.text()


def test_other_configs_stalled_requests_and_the_straddling_one_are_left_out():
    before = served([40.0], 0.0)
    straddling = served([400.0], 9.95)          # started before the side compile
    other = served([999.0], 12.0, config_id="c2")
    stalled = served([999.0], 13.0, stall_ms=5.0)
    during = served([60.0], 15.0)
    cost = side_compile_cost(before + straddling + other + stalled + during, "c1", 10.0, 20.0)
    assert cost is not None and cost.tpot_during_ms == 60.0 and cost.during == 1


def test_nothing_to_compare_is_none():
    assert side_compile_cost(served([40.0], 0.0), "c1", 10.0, 20.0) is None
    assert side_compile_cost(served([40.0], 12.0), "c1", 10.0, 20.0) is None


@given(st.lists(st.floats(1.0, 1e4), min_size=1, max_size=60),
       st.lists(st.floats(1.0, 1e4), min_size=1, max_size=10))
def test_before_counts_at_most_the_latest_requests(before_ms, during_ms):
    records = served(before_ms, 0.0) + served(during_ms, 100.0)
    cost = side_compile_cost(records, "c1", 100.0, 200.0)
    assert cost is not None
    assert cost.before == min(len(before_ms), BEFORE_REQUESTS)
    assert min(before_ms[-BEFORE_REQUESTS:]) <= cost.tpot_before_ms <= max(before_ms)
    assert cost.during == len(during_ms)


def test_a_serving_config_as_fast_during_the_side_compile_is_not_said_slowed():
    from probe.analysis.side_compile_cost import SideCompileCost
    assert SideCompileCost(33.4, 31.3, 20, 5).text() == \
        "serving not slowed by the side compile (TPOT 33.4→31.3 ms)"
    assert SideCompileCost(40, 80, 20, 5).text().startswith("serving slowed 2.0×")
