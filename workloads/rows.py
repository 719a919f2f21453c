"""Field parsing and the checks every reader shares: one place decides what a bad row is."""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Any

from probe.common.errors import TraceError, file_error
from probe.common.shown import shown
from workloads.trace_records import LoadReport, Trace, TraceRequest

SKIP_HINT = " (--skip-bad skips such rows)"

# Bounds that keep every later step finite and a replay of sane length.
MAX_LENGTH = 10_000_000  # tokens per input or output: above any model's context; sums fit int64
MAX_TIMESTAMP_MS = 1e15  # ~31,700 years; a float still resolves 1/8 ms there
MAX_SPAN_S = 1e8  # last request - first, ~3.2 years (BurstGPT's 121 days fit; 1e300 does not)


def row_error(where: str, field_name: str, problem: str, *, reason: str = "malformed row") -> TraceError:
    return TraceError(f"{where}: field '{field_name}': {problem}{SKIP_HINT}", reason=reason)


def _number(value: Any, where: str, field_name: str, expected: str) -> float:
    """A JSON number or a numeric CSV string; bools and NaN/inf are refused."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise row_error(where, field_name, f"expected {expected}, got {shown(value)}")
    try:
        number = float(value.strip() if isinstance(value, str) else value)
    except (ValueError, OverflowError):  # OverflowError: an int beyond float's range
        raise row_error(where, field_name, f"expected {expected}, got {shown(value)}") from None
    if not math.isfinite(number):
        raise row_error(where, field_name, f"expected {expected}, got {shown(value)}")
    return number


def parse_length(value: Any, where: str, field_name: str) -> int:
    """A positive whole token count up to MAX_LENGTH; "12", 12 and 12.0 are accepted, 12.5, 0
    and -3 are not."""
    expected = "a positive whole number of tokens"
    if isinstance(value, int) and not isinstance(value, bool):
        number: float | int = value
    else:
        number = _number(value, where, field_name, expected)
        if number != int(number):
            raise row_error(where, field_name, f"expected {expected}, got {shown(value)}")
    if number <= 0:
        raise row_error(where, field_name, f"expected {expected}, got {shown(value)}",
                        reason="non-positive length")
    if number > MAX_LENGTH:
        raise row_error(where, field_name, f"expected at most {MAX_LENGTH:,} tokens, got {shown(value)}",
                        reason="length out of range")
    return int(number)


def counted_tokens(count: int, where: str, field_name: str) -> int:
    """A token count the counter made from text: refused above MAX_LENGTH, like a given length."""
    if count > MAX_LENGTH:
        raise row_error(where, field_name, f"counts {count:,} tokens; at most {MAX_LENGTH:,} are taken",
                        reason="length out of range")
    return count


def parse_timestamp_ms(value: Any, where: str, field_name: str) -> float:
    expected = f"milliseconds from trace start (a number from 0 to {MAX_TIMESTAMP_MS:g})"
    number = _number(value, where, field_name, expected)
    if not 0 <= number <= MAX_TIMESTAMP_MS:
        raise row_error(where, field_name, f"expected {expected}, got {shown(value)}")
    return number


def optional_str(value: Any, where: str, field_name: str) -> str | None:
    """A string or a whole number (ids are often numeric), as a string; "" and null are None."""
    if value is None or value == "":
        return None
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise row_error(where, field_name, f"expected a string, got {shown(value)}")
    return unicode_text(str(value), where, field_name)


def optional_text(value: Any, where: str, field_name: str) -> str | None:
    """A string (not a number), checked like optional_str; "" and null are None."""
    if value is not None and not isinstance(value, str):
        raise row_error(where, field_name, f"expected a string, got {shown(value)}")
    return unicode_text(value, where, field_name) if value else None


def unicode_text(text: str, where: str, field_name: str) -> str:
    """JSON's \\ud800 escapes can make a lone surrogate, which no UTF-8 writer or tokenizer takes."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise row_error(where, field_name, f"holds an unpaired surrogate "
                                           f"(\\u{ord(text[exc.start]):04x} at character {exc.start})") from None
    return text


@dataclass
class TraceBuilder:
    """Collects requests in file order; checks ordering; counts what --skip-bad skipped.

    A reader calls `row(where)` around each row's parsing so that a TraceError is either raised
    (default) or counted. Timestamps may be rebased so the first kept request is at 0.
    """

    path: str
    skip_bad: bool = False
    rebase: bool = False
    requests: list[TraceRequest] = field(default_factory=list)
    skipped: Counter[str] = field(default_factory=Counter)
    rows_read: int = 0
    _origin_ms: float | None = None

    def skip_or_raise(self, error: TraceError) -> None:
        if self.skip_bad and error.skippable:
            self.skipped[error.reason] += 1
            return
        raise error

    def add(self, where: str, request: TraceRequest) -> None:
        """Append a parsed request; raises (or skips) if its timestamp goes backwards."""
        if self.rebase:
            if self._origin_ms is None:
                self._origin_ms = request.timestamp_ms
            request = replace(request, timestamp_ms=request.timestamp_ms - self._origin_ms)
        if self.requests and request.timestamp_ms - self.requests[0].timestamp_ms > MAX_SPAN_S * 1000:
            self.skip_or_raise(self._span_error(where, request.timestamp_ms))
            return
        if self.requests and request.timestamp_ms < self.requests[-1].timestamp_ms:
            previous = self.requests[-1].timestamp_ms
            shown = request.timestamp_ms + (self._origin_ms or 0.0)
            self.skip_or_raise(TraceError(
                f"{where}: field 'timestamp': goes backwards ({shown:g} ms after "
                f"{previous + (self._origin_ms or 0.0):g} ms); traces must be sorted by arrival"
                f"{SKIP_HINT}",
                reason="timestamp going backwards",
            ))
            return
        self.requests.append(request)

    def _span_error(self, where: str, timestamp_ms: float) -> TraceError:
        after_s = (timestamp_ms - self.requests[0].timestamp_ms) / 1000
        return TraceError(
            f"{where}: field 'timestamp': {after_s:.4g} s after the first request; a trace may "
            f"span at most {MAX_SPAN_S:g} s (about 3 years){SKIP_HINT}",
            reason="timestamp out of range",
        )

    @property
    def origin_ms(self) -> float | None:
        return self._origin_ms

    def finish(self, name: str, source: str | None, notes: list[str] | None = None) -> tuple[Trace, LoadReport]:
        if not self.requests:
            detail = f" ({sum(self.skipped.values())} bad rows skipped)" if self.skipped else ""
            raise file_error(f"{self.path}: empty trace: no requests{detail}")
        report = LoadReport(
            rows_read=self.rows_read,
            skipped=tuple(sorted(self.skipped.items())),
            notes=tuple(notes or ()),
        )
        return Trace(name=name, requests=tuple(self.requests), source=source), report

