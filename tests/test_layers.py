"""The pure lane holds what it promises: tests of values only, never one that starts an engine."""

from __future__ import annotations

from pathlib import Path

from layers import file_is_light, is_pure

TESTS = Path(__file__).resolve().parent


def test_a_file_of_value_tests_is_light_and_an_engine_file_is_not():
    assert file_is_light(TESTS / "workloads" / "test_trace_format.py")
    assert not file_is_light(TESTS / "probe" / "test_process_tree_cpu.py")   # probe.engine
    assert not file_is_light(TESTS / "probe" / "test_third_party_output.py")  # subprocess


def test_an_engine_fixture_or_the_slow_mark_keeps_a_test_out_of_the_pure_lane():
    light = TESTS / "workloads" / "test_trace_format.py"
    assert is_pure(light, ["tmp_path"], slow=False)
    assert not is_pure(light, ["make_engine"], slow=False)
    assert not is_pure(light, ["tmp_path"], slow=True)
