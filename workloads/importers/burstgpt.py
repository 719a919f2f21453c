"""BurstGPT (HPMLL/BurstGPT): Timestamp (s), Model, Request tokens, Response tokens, Total tokens, Log Type.

Later releases insert `Session ID` and `Elapsed time` before the token columns; reading by
name makes that irrelevant. Rows with 0 response tokens are failed requests in that data:
they are dropped and counted, not treated as bad input.
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation
from pathlib import Path

from probe.common.csvtable import csv_rows
from probe.common.errors import TraceError
from probe.common.shown import shown
from workloads.importers.sorting import sorted_rows
from workloads.rows import MAX_TIMESTAMP_MS, TraceBuilder, parse_length, row_error
from workloads.trace_records import LoadReport, Trace, TraceRequest

REQUIRED = ("Timestamp", "Request tokens", "Response tokens")
OPTIONAL = ("Model", "Log Type", "Session ID", "Elapsed time", "Total tokens")
MAX_TIMESTAMP_S = Decimal(MAX_TIMESTAMP_MS) / 1000


def read_burstgpt(path: Path, *, skip_bad: bool = False, sort: bool = False) -> tuple[Trace, LoadReport]:
    builder = TraceBuilder(str(path), skip_bad=skip_bad)
    failed = 0
    parsed: list[tuple[Decimal, str, int, int, str | None]] = []
    for where, row in csv_rows(path, REQUIRED, OPTIONAL):
        builder.rows_read += 1
        try:
            if isinstance(row, TraceError):
                raise row
            seconds = _seconds(row["Timestamp"], where)
            if _is_zero(row["Response tokens"]):
                failed += 1
                continue
            parsed.append((
                seconds,
                where,
                parse_length(row["Request tokens"], where, "Request tokens"),
                parse_length(row["Response tokens"], where, "Response tokens"),
                row.get("Model") or None,
            ))
        except TraceError as error:
            builder.skip_or_raise(error)
    notes = [f"dropped {failed} failed requests (0 response tokens)"]
    if sort:
        parsed, moved = sorted_rows(parsed)
        notes.append(f"sorted by Timestamp: {moved} rows were out of order")
    origin = parsed[0][0] if parsed else Decimal(0)
    for seconds, where, input_length, output_length, model in parsed:
        timestamp_ms = float((seconds - origin) * 1000)
        builder.add(where, TraceRequest(timestamp_ms, input_length, output_length, tag=model))
    if parsed:
        notes.insert(0, f"timestamps relative to the first kept request (Timestamp {origin} s)")
    return builder.finish(path.stem, str(path), notes)


def _seconds(text: str, where: str) -> Decimal:
    try:
        value = Decimal(text.strip())
    except InvalidOperation:
        raise row_error(where, "Timestamp", f"expected seconds (a number), got {shown(text)}") from None
    if not value.is_finite() or not 0 <= value <= MAX_TIMESTAMP_S:
        raise row_error(where, "Timestamp", f"expected seconds from 0 to {float(MAX_TIMESTAMP_S):g}, got {shown(text)}")
    return value


def _is_zero(text: str) -> bool:
    try:
        return float(text) == 0.0
    except ValueError:
        return False  # parse_length names the field
