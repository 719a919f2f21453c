"""Shared helpers for the workloads tests, as fixtures (no package, so no imports between tests)."""

from __future__ import annotations

import argparse
import csv
from pathlib import Path
from typing import Callable, Sequence

import pytest

from workloads.trace_records import Trace, TraceRequest


@pytest.fixture
def make_trace() -> Callable[..., Trace]:
    def make(times_ms: Sequence[float], inputs: Sequence[int] | None = None,
             outputs: Sequence[int] | None = None, name: str = "t") -> Trace:
        inputs = inputs or [10] * len(times_ms)
        outputs = outputs or [5] * len(times_ms)
        return Trace(name, tuple(TraceRequest(float(t), i, o) for t, i, o in zip(times_ms, inputs, outputs)))

    return make


@pytest.fixture
def write_csv(tmp_path: Path) -> Callable[..., Path]:
    def write(name: str, header: Sequence[str], rows: Sequence[Sequence[object]]) -> Path:
        path = tmp_path / name
        with path.open("w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle)
            writer.writerow(header)
            writer.writerows(rows)
        return path

    return write


@pytest.fixture
def cli() -> Callable[..., int]:
    """Run `infertop trace ...` through infertop/commands/trace.py, as the top-level CLI does."""
    from infertop.commands import add_command, trace

    def run(*argv: str) -> int:
        parser = argparse.ArgumentParser(prog="infertop")
        add_command(parser.add_subparsers(dest="command", required=True), trace)
        args = parser.parse_args(["trace", *argv])
        return args.func(args)

    return run
