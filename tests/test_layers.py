"""The pure lane holds what it promises: tests of values only, never one that starts an engine."""

from __future__ import annotations

from pathlib import Path

from layers import LAYERS, file_is_light, is_pure, layer_of, may_hold

TESTS = Path(__file__).resolve().parent


def test_a_file_of_value_tests_is_light_and_an_engine_file_is_not():
    assert file_is_light(TESTS / "workloads" / "test_trace_format.py")
    assert not file_is_light(TESTS / "probe" / "test_process_tree_cpu.py")   # probe.engine
    assert not file_is_light(TESTS / "probe" / "test_third_party_output.py")  # subprocess
    assert not file_is_light(TESTS / "bench" / "test_bench_hygiene.py")   # a fresh interpreter
    assert not file_is_light(TESTS / "bench" / "test_report_html.py")     # headless Chromium


def test_an_engine_fixture_or_the_slow_mark_keeps_a_test_out_of_the_pure_lane():
    light = TESTS / "workloads" / "test_trace_format.py"
    assert is_pure(light, ["tmp_path"], slow=False)
    assert not is_pure(light, ["make_engine"], slow=False)
    assert not is_pure(light, ["tmp_path"], slow=True)


def test_every_test_has_one_layer_and_the_dashboards_are_pilot_or_layout():
    tui, engine_file = TESTS / "tui" / "test_layout.py", TESTS / "probe" / "test_batching.py"
    assert layer_of(tui, ["snap_compare", "make_app"], slow=False) == "layout"
    assert layer_of(tui, ["make_app"], slow=False) == "pilot"
    assert layer_of(engine_file, ["make_engine"], slow=False) == "engine"
    assert layer_of(TESTS / "workloads" / "test_trace_format.py", ["tmp_path"],
                    slow=False) == "pure"
    assert set(LAYERS) == {"pure", "layout", "pilot", "engine"}


def test_a_lane_skips_only_files_that_cannot_hold_its_tests():
    light, engine_file = TESTS / "workloads" / "test_trace_format.py", TESTS / "probe" / "test_batching.py"
    dashboard = TESTS / "tui" / "test_layout.py"
    assert may_hold(light, "pure") and not may_hold(engine_file, "pure")
    assert may_hold(dashboard, "pilot") and may_hold(dashboard, "layout")
    assert not may_hold(engine_file, "pilot") and not may_hold(dashboard, "engine")
    assert all(may_hold(path, "slow") for path in (light, engine_file, dashboard))
