"""Field parsing and the checks every reader shares: one place decides what a bad row is."""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from .errors import TraceError, file_error
from .records import LoadReport, Trace, TraceRequest

SKIP_HINT = " (--skip-bad skips such rows)"


def row_error(where: str, field_name: str, problem: str, *, reason: str = "malformed row") -> TraceError:
    return TraceError(f"{where}: field '{field_name}': {problem}{SKIP_HINT}", reason=reason)


def _number(value: Any, where: str, field_name: str, expected: str) -> float:
    """A JSON number or a numeric CSV string; bools and NaN/inf are refused."""
    if isinstance(value, bool) or value is None:
        raise row_error(where, field_name, f"expected {expected}, got {value!r}")
    if isinstance(value, (int, float)):
        number = float(value)
    elif isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            raise row_error(where, field_name, f"expected {expected}, got {value!r}") from None
    else:
        raise row_error(where, field_name, f"expected {expected}, got {value!r}")
    if not math.isfinite(number):
        raise row_error(where, field_name, f"expected {expected}, got {value!r}")
    return number


def parse_length(value: Any, where: str, field_name: str) -> int:
    """A positive whole token count; "12", 12 and 12.0 are accepted, 12.5, 0 and -3 are not."""
    expected = "a positive whole number of tokens"
    if isinstance(value, int) and not isinstance(value, bool):
        number: float | int = value
    else:
        number = _number(value, where, field_name, expected)
        if number != int(number):
            raise row_error(where, field_name, f"expected {expected}, got {value!r}")
    if number <= 0:
        raise row_error(where, field_name, f"expected {expected}, got {value!r}", reason="non-positive length")
    return int(number)


def parse_timestamp_ms(value: Any, where: str, field_name: str) -> float:
    number = _number(value, where, field_name, "milliseconds from trace start (a number >= 0)")
    if number < 0:
        raise row_error(where, field_name, f"expected milliseconds from trace start (>= 0), got {value!r}")
    return number


def optional_str(value: Any, where: str, field_name: str) -> str | None:
    if value is None or value == "":
        return None
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise row_error(where, field_name, f"expected a string, got {value!r}")
    return str(value)


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
            request = _with_timestamp(request, request.timestamp_ms - self._origin_ms)
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


def _with_timestamp(request: TraceRequest, timestamp_ms: float) -> TraceRequest:
    return TraceRequest(
        timestamp_ms=timestamp_ms,
        input_length=request.input_length,
        output_length=request.output_length,
        text=request.text,
        id=request.id,
        tag=request.tag,
    )
