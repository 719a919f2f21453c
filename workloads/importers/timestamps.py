"""Exact parsing of naive datetimes with up to nine fractional digits.

Azure's trace writes `2023-11-16 18:17:03.9799600`: seven fractional digits (100 ns), which
Python's datetime (microseconds, six digits) cannot take. We parse the fields ourselves into
integer nanoseconds, so differences between rows are exact.
"""

from __future__ import annotations

import datetime as _dt
import re

from probe.common.shown import shown

_NAIVE = re.compile(r"(\d{4})-(\d{2})-(\d{2})[ T](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?")
EXPECTED_FORM = "YYYY-MM-DD HH:MM:SS[.fffffff], no time zone"


def parse_naive_ns(text: str) -> int:
    """Nanoseconds since 0001-01-01 00:00:00. ValueError naming the expected form."""
    match = _NAIVE.fullmatch(text.strip())
    if match is None:
        raise ValueError(f"expected {EXPECTED_FORM}, got {shown(text)}")
    year, month, day, hour, minute, second = (int(g) for g in match.groups()[:6])
    try:
        days = _dt.date(year, month, day).toordinal()
    except ValueError as exc:
        raise ValueError(f"{exc} in {shown(text)}") from None
    if hour > 23 or minute > 59 or second > 59:
        raise ValueError(f"time of day out of range in {shown(text)}")
    fraction = match.group(7) or ""
    nanos = int(fraction.ljust(9, "0")) if fraction else 0
    seconds = days * 86_400 + hour * 3_600 + minute * 60 + second
    return seconds * 1_000_000_000 + nanos
