"""E8's figures from synthetic sessions, recomputed another way (numpy over the records)."""

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from probe.bench.experiments.e8_kv_layout import (
    LayoutRun,
    build,
    checks,
    layout_run,
    median_pair,
    paged_static_ratio,
)
from probe.contract.records import KVPool
from tests.bench.conftest import record

POOL = KVPool(layout="paged", block_tokens=16, blocks_total=100, blocks_peak=37, block_bytes=1024)


def session(make_session, *, held: int, used: list[int], rows: list[float], pool=None):
    records = [replace(record(f"r{i}", i, latency_ms=100.0 + 10 * i, start_s=0.05 * i),
                       kv_cache_bytes=held if pool is None else used[i] + 512,
                       kv_cache_used_bytes=used[i], batch_size=rows[i])
               for i in range(len(used))]
    data = make_session(records)
    return replace(data, kv_pools={"c1": pool}) if pool else data


def test_layouts_side_by_side_with_the_papers_figures(make_session) -> None:
    used = [3000, 5000, 4000, 6000]
    static = layout_run("static", session(make_session, held=20_000, used=used,
                                          rows=[2, 4, 4, 3]), 10.0)
    paged = layout_run("paged", session(make_session, held=0, used=used, rows=[5, 8, 8, 7],
                                        pool=POOL), 10.0)
    held = np.array([20_000] * 4)
    assert static.kv_waste_pct == pytest.approx(100 * (held.sum() - sum(used)) / held.sum())
    paged_held = np.array(used) + 512
    assert paged.kv_waste_pct == pytest.approx(100 * 512 * 4 / paged_held.sum())
    assert static.figures.concurrency_peak == 4 and paged.figures.concurrency_peak == 8
    assert static.slots == 8 and paged.slots == 16
    assert static.kv_budget_bytes == 8 * 20_000 and paged.kv_budget_bytes == 100 * 1024
    section = build({"static": static, "paged": paged}, capacity=1.0, requests=4)
    rows = {row[0]: row for row in section["table"]["rows"]}
    assert rows["static"][-1] == "60–80%" and rows["paged"][-1] == "under 4%"
    columns = section["table"]["columns"]
    blocks = columns.index("blocks peak / total")
    assert rows["paged"][blocks] == "37 / 100" and rows["static"][blocks] == "—"
    assert len(columns) == len(rows["static"])
    assert any("SOSP 2023" in note for note in section["notes"])
    found = checks(section)
    assert found["e8_static_waste_pct"] == pytest.approx(static.kv_waste_pct)
    assert found["e8_paged_waste_pct"] > 10 and not found["e8_ok"]   # 2 kB of 20 kB held: 10.2%
    assert found["e8_concurrency_peak"] == {"static": 4, "paged": 8}


def test_e8_passes_when_paging_wastes_little_and_no_request_fails(make_session) -> None:
    used = [30_000, 50_000, 40_000, 60_000]
    static = layout_run("static", session(make_session, held=100_000, used=used,
                                          rows=[2, 4, 4, 3]), 10.0)
    paged = layout_run("paged", session(make_session, held=0, used=used, rows=[5, 8, 8, 7],
                                        pool=POOL), 10.0)
    section = build({"static": static, "paged": paged}, capacity=1.0, requests=4)
    assert checks(section)["e8_ok"]
    failing = replace(paged, figures=replace(paged.figures, failed=1))
    assert not checks(build({"static": static, "paged": failing}, 1.0, 4))["e8_ok"]


def test_a_machine_that_changed_speed_between_the_layouts_is_said(make_session) -> None:
    used = [3000, 5000]
    static = layout_run("static", session(make_session, held=20_000, used=used, rows=[2, 4]),
                        10.0, (10.0, 11.0))
    paged = layout_run("paged", session(make_session, held=0, used=used, rows=[5, 8], pool=POOL),
                       10.0, (10.0, 25.0))
    observed = build({"static": static, "paged": paged}, 1.0, 2)["observed"]
    assert any("moved 2.50×" in line for line in observed)
    assert not any("moved" in line for line in build(
        {"static": static, "paged": replace(paged, calibration_ms=(10.0, 11.0))}, 1.0, 2)["observed"])


def test_paged_over_static_is_tokens_per_second_at_the_same_slots(make_session) -> None:
    used = [30_000, 50_000, 40_000, 60_000]
    static = layout_run("static", session(make_session, held=100_000, used=used,
                                          rows=[2, 4, 4, 3]), 10.0)
    same = layout_run("paged", session(make_session, held=0, used=used, rows=[2, 4, 4, 3],
                                       pool=POOL), 10.0, slots=8)
    paged = layout_run("paged", session(make_session, held=0, used=used, rows=[5, 8, 8, 7],
                                        pool=POOL), 10.0)
    assert same.slots == static.slots == 8 and paged.slots == 16
    slower = replace(same, figures=replace(same.figures,
                                           tokens_per_s=0.8 * static.figures.tokens_per_s))
    runs = {"static": static, "paged_same_slots": slower, "paged": paged}
    assert paged_static_ratio(runs) == pytest.approx(0.8)
    section = build(runs, capacity=1.0, requests=4)
    assert section["paged_static_ratio"] == pytest.approx(0.8)
    assert {row[0] for row in section["table"]["rows"]} == set(runs)
    found = checks(section)
    assert found["e8_paged_static_ratio"] == pytest.approx(0.8)
    assert found["e8_same_slots_waste_pct"] == pytest.approx(same.kv_waste_pct)
    assert not found["e8_paging_keeps_speed"]              # 0.8 < 0.9
    assert any("0.80× the tokens per second" in line for line in section["observed"])
    runs["paged_same_slots"] = same
    assert checks(build(runs, 1.0, 4))["e8_paging_keeps_speed"]
    assert "e8_paged_static_ratio" not in checks(build({"static": static, "paged": paged}, 1.0, 4))


def _same_slots_pair(static: LayoutRun, ratio: float) -> dict[str, LayoutRun]:
    paged = replace(static, layout="paged", figures=replace(
        static.figures, tokens_per_s=ratio * static.figures.tokens_per_s))
    return {"static": static, "paged_same_slots": paged}


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ratios=st.lists(st.floats(0.3, 2.0), min_size=1, max_size=7))
def test_the_reported_round_is_the_median_round(make_session, ratios) -> None:
    used = [3000, 5000]
    static = layout_run("static", session(make_session, held=20_000, used=used, rows=[2, 4]),
                        10.0)
    pairs = [_same_slots_pair(static, ratio) for ratio in ratios]
    chosen = paged_static_ratio(median_pair(pairs))
    assert chosen == pytest.approx(sorted(ratios)[(len(ratios) - 1) // 2])
    if len(ratios) % 2:
        assert chosen == pytest.approx(float(np.median(ratios)))


def test_the_rounds_are_said_beside_the_median(make_session) -> None:
    used = [3000, 5000]
    static = layout_run("static", session(make_session, held=20_000, used=used, rows=[2, 4]),
                        10.0)
    pairs = [_same_slots_pair(static, ratio) for ratio in (1.1, 0.7, 0.95)]
    runs = {**median_pair(pairs), "paged": pairs[0]["paged_same_slots"]}
    section = build(runs, 1.0, 2, [1.1, 0.7, 0.95])
    assert section["paged_static_ratio"] == pytest.approx(0.95)
    assert section["paged_static_ratios"] == [1.1, 0.7, 0.95]
    assert any("median of 3 alternated rounds (1.10×, 0.70×, 0.95×)" in line
               for line in section["observed"])
    assert checks(section)["e8_paged_static_ratio"] == pytest.approx(0.95)
