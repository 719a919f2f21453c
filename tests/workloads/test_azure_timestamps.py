import datetime as dt

import pytest

from workloads.importers.timestamps import parse_naive_ns


def test_seven_fractional_digits_are_exact() -> None:
    a = parse_naive_ns("2023-11-16 18:17:03.9799600")
    b = parse_naive_ns("2023-11-16 18:17:04.0000001")
    assert b - a == 20_040_100  # 0.0200401 s in ns, no rounding


def test_agrees_with_datetime_where_datetime_can_parse() -> None:
    base = dt.datetime(2023, 11, 16, 0, 0, 0)
    for text in ("2023-11-16 18:17:03.979960", "2023-12-31 23:59:59.999999", "2024-02-29 00:00:00"):
        parsed = dt.datetime.fromisoformat(text)
        expected_ns = round((parsed - base).total_seconds() * 1e6) * 1000
        assert parse_naive_ns(text) - parse_naive_ns("2023-11-16 00:00:00") == expected_ns


def test_crossing_midnight_and_a_leap_day() -> None:
    delta = parse_naive_ns("2024-03-01 00:00:00.5") - parse_naive_ns("2024-02-28 23:59:59.2500000")
    assert delta == (86_400 + 1) * 10**9 + 250_000_000


@pytest.mark.parametrize("text", ["2023-11-16", "2023-11-16 25:00:00", "2023-02-30 00:00:00",
                                  "2023-11-16 18:17:03.9799600+00:00", "2023-11-16 18:17:03.1234567890", "yesterday"])
def test_malformed_timestamps_are_refused(text: str) -> None:
    with pytest.raises(ValueError):
        parse_naive_ns(text)
