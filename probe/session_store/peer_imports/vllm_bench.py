"""vLLM's `vllm bench serve --save-result` JSON (vllm/benchmarks/serve.py's `result_json`):
run-level figures always (`mean_ttft_ms`, `p99_tpot_ms`, `duration`, …); with
`--save-detailed`, per-request arrays of one length (`input_lens`, `output_lens`, `ttfts`,
`itls`, `latencies`, `errors`, and in newer vLLMs `start_times`), in seconds."""

from __future__ import annotations

from typing import Any

from probe.session_store.peer_imports.peer_run import (
    PeerFile,
    PeerRequest,
    PeerRun,
    SummaryFigure,
)
from probe.session_store.peer_imports.values import Where

TOOL = "vLLM bench serve"
MEANINGS = {
    "id": "the request's index in the file (vLLM's result JSON keeps no request id)",
    "arrival_s": "start_times (time.perf_counter() when sent), from the first request's; "
                 "0 for every request where the file has no start_times",
    "latency_ms": "latencies (s, shown in ms): client, request sent → last chunk read",
    "ttft_ms": "ttfts (s, shown in ms): client, request sent → first chunk read",
    "tpot_ms": "(latency − TTFT) / (output_lens − 1), as vLLM computes its TPOT (excl. 1st "
               "token): infertop's TPOT at the client. vLLM's ITL (itls) is the gap between "
               "chunks, in the summary",
    "input_tokens": "input_lens: the prompt's tokens by the benchmark's tokenizer",
    "output_tokens": "output_lens: the reply's tokens (the server's usage where sent, else "
                     "re-tokenized by the client)",
}
DETAILED = ("input_lens", "output_lens", "ttfts", "latencies")
COUNTS = ("completed", "failed", "total_input_tokens", "total_output_tokens", "num_prompts",
          "max_concurrent_requests")
UNITS = {"duration": "s", "request_throughput": "req/s", "request_goodput": "req/s",
         "output_throughput": "tokens/s", "total_token_throughput": "tokens/s",
         "max_output_tokens_per_s": "tokens/s"}
MEANS = {"ttft": "client TTFT", "tpot": "client TPOT excl. the 1st token",
         "itl": "client gap between chunks", "e2el": "client end-to-end latency"}


def is_result(document: Any) -> bool:
    return type(document) is dict and "duration" in document and "completed" in document and (
        "backend" in document or "mean_e2el_ms" in document or "mean_ttft_ms" in document)


def read_result(document: dict[str, Any], source: str) -> PeerFile:
    at = Where(source, TOOL)
    summary = _summary(at, document)
    detailed = all(name in document for name in DETAILED)
    requests = _requests(at, document) if detailed else ()
    model = document.get("model_id")
    version = document.get("vllm_version")
    run = PeerRun(str(document.get("label") or document.get("backend") or "bench serve"),
                  requests, summary)
    return PeerFile(TOOL, version if type(version) is str else None,
                    "--save-result" + (" --save-detailed" if detailed else ""),
                    model if type(model) is str else None, (run,), MEANINGS,
                    per_request=detailed)


def _requests(at: Where, document: dict[str, Any]) -> tuple[PeerRequest, ...]:
    columns = {name: at.items(document[name], name) for name in DETAILED}
    n = len(columns["latencies"])
    optional = {name: at.items(document[name], name) for name in ("start_times", "errors")
                if document.get(name) is not None}
    for name, values in {**columns, **optional}.items():
        if len(values) != n:
            raise at.refuse(name, f"holds {len(values)} values, latencies {n}: the per-request "
                                  f"arrays must be of one length")
    starts = optional.get("start_times")
    errors = optional.get("errors")
    requests = []
    for i in range(n):
        error = at.optional_text(errors[i], f"errors[{i}]") if errors else None
        latency = at.number(columns["latencies"][i], f"latencies[{i}]")
        ttft = at.number(columns["ttfts"][i], f"ttfts[{i}]")
        out = at.count(columns["output_lens"][i], f"output_lens[{i}]")
        failed = bool(error)
        tpot = ((latency - ttft) * 1e3 / (out - 1) if not failed and out > 1 and latency >= ttft
                else None)
        requests.append(PeerRequest(
            id=f"vllm-{i}",
            start_s=at.number(starts[i], f"start_times[{i}]", high=1e13) if starts else 0.0,
            latency_ms=latency * 1e3, ttft_ms=None if failed or ttft == 0 else ttft * 1e3,
            tpot_ms=tpot, input_tokens=at.count(columns["input_lens"][i], f"input_lens[{i}]"),
            output_tokens=out, error=error or None))
    return tuple(requests)


def _summary(at: Where, document: dict[str, Any]) -> tuple[SummaryFigure, ...]:
    figures = []
    for name, value in document.items():
        if type(value) not in (int, float) or type(value) is bool:
            continue
        if name.endswith("_ms"):
            stat, _, metric = name[:-3].partition("_")
            figures.append(SummaryFigure(name, at.number(value, name, low=-1e15), "ms",
                                         MEANS.get(metric, "") + (f" ({stat})" if stat else "")))
        elif name in UNITS:
            figures.append(SummaryFigure(name, at.number(value, name), UNITS[name]))
        elif name in COUNTS:
            figures.append(SummaryFigure(name, at.count(value, name), "count"))
    if not figures:
        raise at.refuse("the file", "holds no run-level figure (mean_ttft_ms, duration, …)")
    return tuple(figures)
