"""Which tool wrote a file (by its shape, not its name), read by that tool's module, written
as a session JSON atomically: a file no reader recognises is one BadInput line."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from probe.common.atomic import check_output_file, write_json_atomic
from probe.common.errors import BadInput, TraceError
from probe.common.textio import JsonProblem, parse_json, read_text
from probe.session_store.peer_imports import aiperf, guidellm, inference_perf, vllm_bench
from probe.session_store.peer_imports.peer_run import PeerFile
from probe.session_store.peer_imports.peer_session import peer_document
from probe.session_store.snapshot import saved_session

KNOWN = ("AIPerf profile_export.jsonl or profile_export_aiperf.json, guidellm benchmarks.json, "
         "vLLM bench serve --save-result JSON, inference-perf per_request_lifecycle_metrics.json")


def read_peer_file(path: str | os.PathLike) -> PeerFile:
    """The file read by the reader of the tool that wrote it."""
    source = str(path)
    try:
        text = read_text(Path(path))
    except TraceError as exc:
        raise BadInput(f"import {exc}") from None
    try:
        document: Any = parse_json(text)
    except JsonProblem as exc:
        lines = text.splitlines()
        first = next((line for line in lines if line.strip()), "")
        if _parses_as_records(first):
            return aiperf.read_records(Path(path), lines, source)
        raise BadInput(f"{exc.located(source)}: {exc}; infertop imports {KNOWN}") from None
    if aiperf.is_records(document):
        return aiperf.read_records(Path(path), text.splitlines(), source)
    for recognises, read in ((guidellm.is_report, guidellm.read_report),
                             (vllm_bench.is_result, vllm_bench.read_result),
                             (inference_perf.is_lifecycle, inference_perf.read_lifecycle),
                             (aiperf.is_summary, aiperf.read_summary)):
        if recognises(document):
            return read(document, source)
    raise BadInput(f"{source}: not a result file infertop can import; it imports {KNOWN}")


def _parses_as_records(line: str) -> bool:
    try:
        return aiperf.is_records(parse_json(line))
    except JsonProblem:
        return False


def import_peer_file(path: str | os.PathLike, out: str | os.PathLike) -> tuple[Path, PeerFile]:
    """Read `path`, check the session it makes as every reader would, write it to `out`."""
    check_output_file(out, "--out", inputs=[path])
    peer = read_peer_file(path)
    document = peer_document(peer, str(path))
    saved_session(document, source=f"import {path}")
    try:    # a \ud800 escape in the file: no session reader takes an unpaired surrogate
        json.dumps(document, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        raise BadInput(f"{path}: holds an unpaired surrogate (a lone \\ud800-\\udfff "
                       f"escape) in a string infertop would keep") from None
    return write_json_atomic(out, document), peer
