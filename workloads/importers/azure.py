"""Azure LLM inference trace 2023 (Azure/AzurePublicDataset): TIMESTAMP, ContextTokens, GeneratedTokens."""

from __future__ import annotations

import datetime as _dt
from pathlib import Path

from probe.common.csvtable import csv_rows
from probe.common.errors import TraceError
from workloads.importers.sorting import sorted_rows
from workloads.importers.timestamps import parse_naive_ns
from workloads.rows import TraceBuilder, parse_length, row_error
from workloads.trace_records import LoadReport, Trace, TraceRequest

COLUMNS = ("TIMESTAMP", "ContextTokens", "GeneratedTokens")


def read_azure(path: Path, *, skip_bad: bool = False, sort: bool = False) -> tuple[Trace, LoadReport]:
    builder = TraceBuilder(str(path), skip_bad=skip_bad)
    parsed: list[tuple[int, str, int, int]] = []  # (ns, where, input, output)
    for where, row in csv_rows(path, COLUMNS):
        builder.rows_read += 1
        try:
            if isinstance(row, TraceError):
                raise row
            try:
                ns = parse_naive_ns(row["TIMESTAMP"])
            except ValueError as exc:
                raise row_error(where, "TIMESTAMP", str(exc)) from None
            parsed.append((
                ns,
                where,
                parse_length(row["ContextTokens"], where, "ContextTokens"),
                parse_length(row["GeneratedTokens"], where, "GeneratedTokens"),
            ))
        except TraceError as error:
            builder.skip_or_raise(error)
    notes: list[str] = []
    if sort:
        parsed, moved = sorted_rows(parsed)
        notes.append(f"sorted by TIMESTAMP: {moved} rows were out of order")
    origin_ns = parsed[0][0] if parsed else 0
    for ns, where, input_length, output_length in parsed:
        # Integer nanoseconds until this one division: exact relative times.
        builder.add(where, TraceRequest((ns - origin_ns) / 1e6, input_length, output_length, tag="azure"))
    if parsed:
        first = row_time_text(origin_ns)
        notes.insert(0, f"timestamps relative to the first request ({first})")
    return builder.finish(path.stem, str(path), notes)


def row_time_text(ns: int) -> str:
    seconds, nanos = divmod(ns, 1_000_000_000)
    days, rest = divmod(seconds, 86_400)
    day = _dt.date.fromordinal(days)
    hours, rest = divmod(rest, 3_600)
    minutes, secs = divmod(rest, 60)
    return f"{day.isoformat()} {hours:02d}:{minutes:02d}:{secs:02d}.{nanos:09d}"
