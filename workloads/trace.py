"""Traces: the public entry points to load and write them.

A trace file is JSONL in the mooncake trace format (the one NVIDIA AIPerf, guidellm and SGLang
read): one request a line with `timestamp` (ms from trace start), `input_length`,
`output_length`, and optionally `text`, `id`, `tag`. A .csv file with the same column names is
read too. Built-in traces are loaded by name.
"""

from __future__ import annotations

import json
import math
import os
from importlib import resources
from pathlib import Path
from typing import Iterator

from probe.common.atomic import atomic_write_lines
from probe.common.errors import file_error
from workloads.reader import read_native
from workloads.tokens import TokenCounter
from workloads.trace_records import LoadReport, Trace, TraceRequest

__all__ = [
    "BUILTIN_TRACES",
    "DEFAULT_TRACE",
    "GENERATED_TRACES",
    "REAL_TRACES",
    "LoadReport",
    "Trace",
    "TraceRequest",
    "builtin_path",
    "load_trace",
    "load_trace_with_report",
    "trace_lines",
    "write_trace",
]

# Made by our generator from its profiles (`trace generate --builtin` rewrites them).
GENERATED_TRACES: tuple[str, ...] = ("chat", "summarize", "translate", "batch")
# Production traffic, imported and fitted once; its license and attribution sit beside it
# (builtin/azure-conv.ATTRIBUTION.md).
REAL_TRACES: tuple[str, ...] = ("azure-conv",)
BUILTIN_TRACES: tuple[str, ...] = REAL_TRACES + GENERATED_TRACES
DEFAULT_TRACE = "azure-conv"        # the dashboard's and replay's --trace


def builtin_path(name: str) -> Path:
    return Path(str(resources.files("workloads") / "builtin" / f"{name}.jsonl"))


def load_trace_with_report(
    name_or_path: str | os.PathLike[str],
    *,
    skip_bad: bool = False,
    count_tokens: TokenCounter | None = None,
) -> tuple[Trace, LoadReport]:
    """Like load_trace, and also what was skipped (for --skip-bad summaries)."""
    text = str(name_or_path)
    if text in BUILTIN_TRACES:
        return read_native(builtin_path(text), name=text, source=f"builtin:{text}")
    path = Path(text)
    if not path.exists():
        raise file_error(
            f"{text}: no such trace file (built-in traces: {', '.join(BUILTIN_TRACES)})"
        )
    return read_native(path, skip_bad=skip_bad, count_tokens=count_tokens)


def load_trace(
    name_or_path: str | os.PathLike[str],
    *,
    skip_bad: bool = False,
    count_tokens: TokenCounter | None = None,
) -> Trace:
    """A built-in name (azure-conv|chat|summarize|translate|batch) or a .jsonl/.csv path."""
    return load_trace_with_report(name_or_path, skip_bad=skip_bad, count_tokens=count_tokens)[0]


def write_trace(trace: Trace, path: str | os.PathLike[str], *, integer_ms: bool = False) -> None:
    """Write JSONL atomically. `integer_ms` rounds timestamps to whole ms (AIPerf wants ints)."""
    atomic_write_lines(path, trace_lines(trace, integer_ms=integer_ms))


def trace_lines(trace: Trace, *, integer_ms: bool = False) -> Iterator[str]:
    for request in trace.requests:
        yield json.dumps(_row(request, integer_ms), ensure_ascii=False) + "\n"


def _row(request: TraceRequest, integer_ms: bool) -> dict[str, object]:
    timestamp: float | int = request.timestamp_ms
    if integer_ms:
        timestamp = int(math.floor(timestamp + 0.5))
    elif float(timestamp).is_integer():
        timestamp = int(timestamp)  # "1500", not "1500.0": tools that want ints accept it
    row: dict[str, object] = {
        "timestamp": timestamp,
        "input_length": request.input_length,
        "output_length": request.output_length,
    }
    for key in ("text", "id", "tag"):
        value = getattr(request, key)
        if value is not None:
            row[key] = value
    return row
