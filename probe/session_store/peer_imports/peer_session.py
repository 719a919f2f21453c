"""A peer's result file as an infertop session: one config per run, one RequestRecord per
request the file holds, and an `imported` section that says which tool measured them, what each
figure means there, and the summary figures the tool saved (all a summary-only file holds)."""

from __future__ import annotations

from dataclasses import asdict
from types import MappingProxyType
from typing import Any

from probe.common.errors import BadInput
from probe.contract.options import OptConfig
from probe.contract.records import RequestRecord
from probe.contract.session import ConfigEntry, SessionData
from probe.session_store.peer_imports.imported_text import IMPORTED
from probe.session_store.peer_imports.peer_run import PeerFile, PeerRequest, PeerRun
from probe.session_store.record_ranges import problem_of
from probe.session_store.snapshot import snapshot_document

# RequestRecord fields no client can see: saved as 0, named in the section so no reader
# takes them for measurements
NOT_MEASURED = ("queue_ms", "compile_stall_ms", "encoder_ms", "decoder_ms", "padded_tokens",
                "kv_cache_bytes", "kv_cache_used_bytes", "kv_self_attention_bytes",
                "kv_cross_attention_bytes", "kv_wait_ms", "batch_size")


def peer_document(peer: PeerFile, source: str) -> dict[str, Any]:
    """The snapshot document of `peer` (read from `source`), its records range-checked as
    every session reader checks them."""
    starts = [r.start_s for run in peer.runs for r in run.requests]
    origin = min(starts) if starts else 0.0
    configs: dict[str, ConfigEntry] = {}
    records: list[RequestRecord] = []
    for index, run in enumerate(peer.runs, start=1):
        config_id = f"c{index}"
        configs[config_id] = ConfigEntry(config_id, OptConfig(), (_note(peer, run),))
        for request in run.requests:
            record = _record(request, len(records), config_id, origin)
            problem = problem_of(record)
            if problem is not None:
                raise BadInput(f"{source}: request {request.id!r} is out of range once read "
                               f"as a session: {problem}")
            records.append(record)
    data = SessionData(records=tuple(records), configs=MappingProxyType(configs))
    document = snapshot_document(
        data, environment={"device": f"{peer.tool} client", "device_name": "not recorded",
                           "torch": "not used"},
        model={"name": peer.model or "not recorded", "dtype": "not recorded"},
        trace={"name": f"{peer.tool} {peer.format}", "source": source})
    document[IMPORTED] = {
        "tool": peer.tool, "version": peer.version, "format": peer.format, "source": source,
        "per_request": peer.per_request,
        "clock": f"the client's ({peer.tool}): arrival_s is seconds since the file's first "
                 f"request was sent; every latency brackets the server's own",
        "figures": dict(peer.meanings),
        "not_measured": list(NOT_MEASURED),
        "runs": {f"c{i}": {"name": run.name,
                           "summary": [asdict(f) for f in run.summary],
                           "skipped": dict(run.skipped)}
                 for i, run in enumerate(peer.runs, start=1)},
    }
    return document


def _note(peer: PeerFile, run: PeerRun) -> str:
    what = "per-request records" if peer.per_request else "summary figures only"
    return f"imported from {peer.tool} ({run.name}): {what}; its options are not infertop's"


def _record(request: PeerRequest, seq: int, config_id: str, origin: float) -> RequestRecord:
    arrival = request.start_s - origin
    first = None if request.ttft_ms is None else arrival + request.ttft_ms / 1e3
    last = (None if first is None or request.tpot_ms is None or request.output_tokens < 1 else
            first + request.tpot_ms * (request.output_tokens - 1) / 1e3)
    return RequestRecord(
        id=request.id, seq=seq, config_id=config_id, input_tokens=request.input_tokens,
        padded_tokens=request.input_tokens, output_tokens=request.output_tokens,
        arrival_s=arrival, start_s=arrival, first_token_s=first,
        end_s=arrival + request.latency_ms / 1e3, queue_ms=0.0, compile_stall_ms=0.0,
        encoder_ms=0.0, decoder_ms=0.0, ttft_ms=request.ttft_ms, tpot_ms=request.tpot_ms,
        latency_ms=request.latency_ms, kv_cache_bytes=0, kv_cache_used_bytes=0,
        kv_self_attention_bytes=0, kv_cross_attention_bytes=0, error=request.error,
        last_token_s=last)
