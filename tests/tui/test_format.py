"""Units, rounding and missing values as they read on screen."""

import pytest

from probe.common.units import (
    fmt_bytes,
    fmt_clock,
    fmt_count,
    fmt_fraction,
    fmt_ms,
    fmt_pct,
    fmt_rate,
    fmt_ratio,
    fmt_speed,
)
from tui.format import truncate, truncate_left


@pytest.mark.parametrize("value, text", [
    (None, "N/A"), (0, "0 B"), (1023, "1023 B"), (1024, "1.00 KiB"), (1536, "1.50 KiB"),
    (10 * 1024 ** 2, "10.0 MiB"), (1023.9 * 1024, "1.00 MiB"), (139 * 1024 ** 3, "139 GiB"),
    (-2048, "-2.00 KiB"),
])
def test_bytes(value, text):
    assert fmt_bytes(value) == text


@pytest.mark.parametrize("value, text", [
    (None, "—"), (0.25, "0.2 ms"), (9.6, "9.6 ms"), (9.96, "10 ms"), (812.4, "812 ms"),
    (999.6, "1.00 s"), (1920, "1.92 s"), (61_800, "61.8 s"), (123_456, "123 s"),
])
def test_milliseconds(value, text):
    assert fmt_ms(value) == text


def test_missing_values_say_which_kind_of_missing():
    assert fmt_ms(None) == "—" and fmt_pct(None) == "N/A"
    assert fmt_bytes(None, missing="—") == "—" and fmt_rate(None, "req/s") == "—"


@pytest.mark.parametrize("value, text", [(0.5, "0.50 req/s"), (23.17, "23.2 req/s"),
                                         (140.2, "140 req/s")])
def test_rates(value, text):
    assert fmt_rate(value, "req/s") == text


def test_the_rest():
    assert fmt_pct(97.6) == "98%"
    assert fmt_fraction(0.773) == "77%" and fmt_fraction(0.052) == "5.2%"
    assert fmt_fraction(0.00034) == "0.034%" and fmt_fraction(0) == "0%"   # small is never 0%
    assert fmt_count(2202) == "2,202"
    assert fmt_clock(83.42) == "83.4 s" and fmt_clock(725) == "12:05" and fmt_clock(3725) == "1:02:05"
    assert fmt_speed(0.125) == "×0.125" and fmt_speed(64.0) == "×64"
    assert truncate("abcdef", 4) == "abc…" and truncate("abc", 4) == "abc"
    assert truncate_left("transformers/x/y.py:12", 10) == "…x/y.py:12"


@pytest.mark.parametrize("value, text", [
    (None, "—"), (1.483, "1.48×"), (0.65, "0.65×"), (9.996, "10.00×"), (11.63, "11.6×"),
    (99.4, "99.4×"), (11631.4, "11,631×"),
])
def test_ratios_keep_three_significant_digits(value, text):
    assert fmt_ratio(value) == text
