"""Mooncake traces (kvcache-ai/Mooncake): JSONL with timestamp (ms), input_length, output_length, hash_ids.

This is infertop's own format plus `hash_ids` (512-token prefix blocks), which is ignored: the
engine makes fresh prompts, so prefix reuse is not modelled.
"""

from __future__ import annotations

from pathlib import Path

from workloads.reader import read_native
from workloads.trace_records import LoadReport, Trace


def read_mooncake(path: Path, *, skip_bad: bool = False) -> tuple[Trace, LoadReport]:
    return read_native(path, skip_bad=skip_bad, require_input_length=True, rebase=True)
