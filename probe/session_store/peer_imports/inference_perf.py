"""inference-perf's `per_request_lifecycle_metrics.json` (written with
`report.request_lifecycle.per_request: true`): a list, one entry a request, {start_time,
end_time, request, response, info, error[, computed_metrics]}, as inference_perf/reportgen/
base.py's build_per_request_lifecycle_entry writes it (0.7.0, tests/fixtures/peers/
inference_perf/). `info` is `InferenceInfo`: request_metrics.text.input_tokens, and
response_metrics with output_tokens, server_usage and, streamed, output_token_times (one time
a client token once the summary has re-tokenized the chunks, as it does by default). Older
releases kept input_tokens, output_tokens and output_token_times directly in `info`; both are
read. `response` is the raw reply (the SSE text streamed); its `id` is the one the server
gave the request, the only id the file holds."""

from __future__ import annotations

from typing import Any

from probe.common.textio import JsonProblem, parse_json
from probe.session_store.peer_imports.peer_run import PeerFile, PeerRequest, PeerRun
from probe.session_store.peer_imports.values import Where

TOOL = "inference-perf"
MEANINGS = {
    "id": "the `id` of the reply saved in `response` (infertop serve's request id, echoed in "
          "its body); inference-perf-INDEX where the reply holds none (a refused request, or "
          "per_request_fields.response off): inference-perf sends and keeps no request id",
    "arrival_s": "start_time (time.perf_counter() when sent, s), from the first request's",
    "latency_ms": "end_time − start_time (s, shown in ms): client, request sent → reply read "
                  "whole; inference-perf's request_latency",
    "ttft_ms": "output_token_times[0] − start_time: client, first chunk with text read; "
               "streamed only, and only where the reply has 2 or more client tokens, as "
               "inference-perf computes its time_to_first_token. A token that decodes to no "
               "text is no chunk to it, so its TTFT can end on a later token than the server's",
    "tpot_ms": "(output_token_times[-1] − output_token_times[0]) / (output tokens − 1), as "
               "inference-perf computes its time_per_output_token: infertop's TPOT at the "
               "client",
    "input_tokens": "info.request_metrics.text.input_tokens: the server's usage.prompt_tokens "
                    "where the reply had them, else the client's tokenizer",
    "output_tokens": "info.response_metrics.output_tokens: the reply's text re-tokenized by "
                     "the client (the server's count is response_metrics.server_usage)",
}


def is_lifecycle(document: Any) -> bool:
    return (type(document) is list and bool(document) and type(document[0]) is dict
            and "start_time" in document[0] and "end_time" in document[0]
            and "info" in document[0])


def read_lifecycle(document: list[Any], source: str) -> PeerFile:
    at = Where(source, TOOL)
    requests = tuple(_request(at, raw, f"[{index}]") for index, raw in enumerate(document))
    seen: set[str] = set()
    for request in requests:
        if request.id in seen:
            raise at.refuse("response", f"request id {request.id!r} appears twice")
        seen.add(request.id)
    return PeerFile(TOOL, None, "per_request_lifecycle_metrics.json", None,
                    (PeerRun("lifecycle", requests),), MEANINGS, per_request=True)


def reply_id(at: Where, response: Any, where: str) -> str | None:
    """The `id` of the first JSON object in the saved reply: a body, or SSE `data:` lines."""
    if response is None:
        return None
    for line in at.text(response, where).splitlines():
        line = line.strip()
        if line.startswith("data:"):
            line = line[len("data:"):].strip()
        if not line.startswith("{"):
            continue
        try:
            body = parse_json(line)
        except JsonProblem:
            continue
        if type(body) is dict:
            return at.optional_text(body.get("id"), f"{where}: the reply's id") or None
    return None


def _request(at: Where, raw: Any, where: str) -> PeerRequest:
    item = at.obj(raw, where)
    start = at.number(at.key(item, "start_time", where), f"{where}.start_time", high=1e13)
    end = at.number(at.key(item, "end_time", where), f"{where}.end_time", low=start, high=1e13)
    info = at.obj(item.get("info") or {}, f"{where}.info")
    response = at.obj(info.get("response_metrics") or {}, f"{where}.info.response_metrics")
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
    streamed = len(times) > 1      # inference-perf's own test for TTFT and TPOT
    return PeerRequest(
        id=reply_id(at, item.get("response"), f"{where}.response")
        or f"inference-perf-{where.strip('[]')}",
        start_s=start, latency_ms=(end - start) * 1e3,
        ttft_ms=(times[0] - start) * 1e3 if streamed else None,
        tpot_ms=(times[-1] - times[0]) * 1e3 / (out - 1) if streamed and out > 1 else None,
        input_tokens=at.optional_count(input_tokens, f"{where}.input_tokens") or 0,
        output_tokens=out, error=error)
