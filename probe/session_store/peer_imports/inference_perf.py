"""inference-perf's `per_request_lifecycle_metrics.json`: a list, one entry a request,
{start_time, end_time, request, response, info, error}, as inference_perf/reportgen/base.py
writes it; `info` is `InferenceInfo` (request_metrics.text.input_tokens, response_metrics with
output_tokens and, streamed, output_token_times). Older releases kept input_tokens,
output_tokens and output_token_times directly in `info`; both are read."""

from __future__ import annotations

from typing import Any

from probe.session_store.peer_imports.peer_run import PeerFile, PeerRequest, PeerRun
from probe.session_store.peer_imports.values import Where

TOOL = "inference-perf"
MEANINGS = {
    "id": "the request's index in the file (inference-perf keeps no request id)",
    "arrival_s": "start_time (time.perf_counter() when sent, s), from the first request's",
    "latency_ms": "end_time − start_time (s, shown in ms): client, request sent → reply read",
    "ttft_ms": "output_token_times[0] − start_time: client, first token's chunk read "
               "(streamed only)",
    "tpot_ms": "(output_token_times[-1] − output_token_times[0]) / (output tokens − 1), as "
               "inference-perf computes its TPOT: infertop's TPOT at the client",
    "input_tokens": "info.request_metrics.text.input_tokens: the client's tokenizer",
    "output_tokens": "info.response_metrics.output_tokens: the client's count of the reply",
}


def is_lifecycle(document: Any) -> bool:
    return (type(document) is list and bool(document) and type(document[0]) is dict
            and "start_time" in document[0] and "end_time" in document[0]
            and "info" in document[0])


def read_lifecycle(document: list[Any], source: str) -> PeerFile:
    at = Where(source, TOOL)
    requests = tuple(_request(at, raw, f"[{index}]") for index, raw in enumerate(document))
    return PeerFile(TOOL, None, "per_request_lifecycle_metrics.json", None,
                    (PeerRun("lifecycle", requests),), MEANINGS, per_request=True)


def _request(at: Where, raw: Any, where: str) -> PeerRequest:
    item = at.obj(raw, where)
    start = at.number(at.key(item, "start_time", where), f"{where}.start_time", high=1e13)
    end = at.number(at.key(item, "end_time", where), f"{where}.end_time", low=start, high=1e13)
    info = item.get("info") or {}
    info = at.obj(info, f"{where}.info")
    response = info.get("response_metrics") or {}
    response = at.obj(response, f"{where}.info.response_metrics")
    metrics = at.obj(info.get("request_metrics") or {}, f"{where}.info.request_metrics")
    text = at.obj(metrics.get("text") or {}, f"{where}.info.request_metrics.text")
    input_tokens = text.get("input_tokens", info.get("input_tokens"))
    output_tokens = response.get("output_tokens", info.get("output_tokens"))
    times = response.get("output_token_times", info.get("output_token_times")) or []
    times = [at.number(t, f"{where}.output_token_times[{i}]", low=start, high=1e13)
             for i, t in enumerate(at.items(times, f"{where}.output_token_times"))]
    out = at.optional_count(output_tokens, f"{where}.output_tokens") or 0
    error = item.get("error")
    if error is not None:
        error = at.obj(error, f"{where}.error")
        error = ": ".join(str(error[k]) for k in ("error_type", "error_msg") if error.get(k)) \
            or "error"
    return PeerRequest(
        id=f"inference-perf-{where.strip('[]')}", start_s=start, latency_ms=(end - start) * 1e3,
        ttft_ms=(times[0] - start) * 1e3 if times else None,
        tpot_ms=((times[-1] - times[0]) * 1e3 / (out - 1) if len(times) > 1 and out > 1
                 else None),
        input_tokens=at.optional_count(input_tokens, f"{where}.input_tokens") or 0,
        output_tokens=out, error=error)
