"""Importers for public LLM traffic traces, each reading its columns by name."""

from __future__ import annotations

import os
from pathlib import Path

from probe.common.errors import file_error
from workloads.importers.azure import read_azure
from workloads.importers.burstgpt import read_burstgpt
from workloads.importers.mooncake import read_mooncake
from workloads.importers.sharegpt import read_sharegpt
from workloads.tokens import TokenCounter
from workloads.trace_records import LoadReport, Trace

FORMATS: tuple[str, ...] = ("azure", "burstgpt", "mooncake", "sharegpt")


def import_trace(
    fmt: str,
    path: str | os.PathLike[str],
    *,
    skip_bad: bool = False,
    count_tokens: TokenCounter | None = None,
    rate: float = 1.0,
    seed: int = 0,
    sort: bool = False,
) -> tuple[Trace, LoadReport]:
    """Read a public trace into requests. Timestamps are rebased so the first is at 0.

    `count_tokens`, `rate` and `seed` matter only to ShareGPT (text, no timestamps);
    `sort` orders rows by time first (reported) for CSV traces that are not sorted.
    """
    path = Path(path)
    if not path.exists():
        raise file_error(f"{path}: no such file")
    if fmt == "azure":
        return read_azure(path, skip_bad=skip_bad, sort=sort)
    if fmt == "burstgpt":
        return read_burstgpt(path, skip_bad=skip_bad, sort=sort)
    if fmt == "mooncake":
        return read_mooncake(path, skip_bad=skip_bad)
    if fmt == "sharegpt":
        return read_sharegpt(path, skip_bad=skip_bad, count_tokens=count_tokens, rate=rate, seed=seed)
    raise file_error(f"--format: unknown trace format {fmt!r} (choose from: {', '.join(FORMATS)})")


__all__ = ["FORMATS", "import_trace"]
