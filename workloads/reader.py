"""Read infertop's own trace format: mooncake-style JSONL, or CSV with the same columns.

Columns: `timestamp` (ms from trace start), `input_length`, `output_length`; optional `text`
(when `input_length` is absent the token counter decides it), `id`, `tag`. Other keys, such as
mooncake's `hash_ids`, are ignored.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator, Mapping

from probe.common.csvtable import csv_rows
from probe.common.errors import TraceError
from probe.common.shown import shown
from probe.common.textio import JsonProblem, checked_lines, open_text, parse_json
from workloads.rows import (
    SKIP_HINT,
    TraceBuilder,
    counted_tokens,
    optional_str,
    optional_text,
    parse_length,
    parse_timestamp_ms,
    row_error,
)
from workloads.tokens import TokenCounter, estimate_tokens
from workloads.trace_records import LoadReport, Trace, TraceRequest

NUMBER_FIELDS = ("timestamp", "input_length", "output_length")


def read_native(
    path: str | Path,
    *,
    skip_bad: bool = False,
    count_tokens: TokenCounter | None = None,
    name: str | None = None,
    source: str | None = None,
    require_input_length: bool = False,
    rebase: bool = False,
) -> tuple[Trace, LoadReport]:
    """Read a .csv file as CSV and anything else as JSONL."""
    path = Path(path)
    builder = TraceBuilder(str(path), skip_bad=skip_bad, rebase=rebase)
    counter = count_tokens or estimate_tokens
    if path.suffix.lower() == ".csv":
        rows = csv_rows(path, ["timestamp", "output_length"], ["id", "tag"], any_of=("input_length", "text"))
    else:
        rows = _jsonl_rows(path)
    for where, row in rows:
        builder.rows_read += 1
        try:
            if isinstance(row, TraceError):
                raise row
            builder.add(where, request_from_row(row, where, counter, require_input_length))
        except TraceError as error:
            builder.skip_or_raise(error)
    notes = []
    if rebase and builder.origin_ms:
        notes.append(f"timestamps rebased: the first request ({builder.origin_ms:g} ms) is now at 0")
    return builder.finish(name or path.stem, source or str(path), notes)


def request_from_row(
    row: Mapping[str, Any], where: str, count_tokens: TokenCounter, require_input_length: bool = False
) -> TraceRequest:
    if "timestamp" not in row:
        raise row_error(where, "timestamp", "missing (milliseconds from trace start)")
    if "output_length" not in row or row["output_length"] in (None, ""):
        raise row_error(where, "output_length", "missing (a positive whole number of tokens)")
    timestamp_ms = parse_timestamp_ms(row["timestamp"], where, "timestamp")
    output_length = parse_length(row["output_length"], where, "output_length")
    text = optional_text(row.get("text"), where, "text")
    raw_input = row.get("input_length")
    if raw_input not in (None, ""):
        input_length = parse_length(raw_input, where, "input_length")
    elif text is not None and not require_input_length:
        input_length = counted_tokens(count_tokens(text), where, "text")
        if input_length <= 0:
            raise row_error(where, "text", "has no tokens", reason="non-positive length")
    else:
        need = "input_length" if require_input_length else "input_length or text"
        raise row_error(where, "input_length", f"missing (give {need})")
    return TraceRequest(
        timestamp_ms=timestamp_ms,
        input_length=input_length,
        output_length=output_length,
        text=text,
        id=optional_str(row.get("id"), where, "id"),
        tag=optional_str(row.get("tag"), where, "tag"),
    )


def _jsonl_rows(path: Path) -> Iterator[tuple[str, dict[str, Any] | TraceError]]:
    with open_text(path) as handle:
        for number, line in enumerate(checked_lines(handle, path), start=1):
            if not line.strip():
                continue
            where = f"{path}:{number}"
            try:
                row = parse_json(line)
            except JsonProblem as exc:
                yield where, TraceError(f"{where}: {exc}{SKIP_HINT}")
                continue
            if not isinstance(row, dict):
                yield where, TraceError(f"{where}: expected a JSON object per line, got {type(row).__name__}")
                continue
            quoted = next((key for key in NUMBER_FIELDS if isinstance(row.get(key), str)), None)
            if quoted is not None:  # CSV cells are text; in JSON a number is written as one
                yield where, row_error(where, quoted, f"expected a JSON number, got the string "
                                                      f"{shown(row[quoted])}")
                continue
            yield where, row
