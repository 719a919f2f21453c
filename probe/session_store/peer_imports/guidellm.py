"""guidellm's `benchmarks.json` (`GenerativeBenchmarksReport`: `metadata`, `benchmarks[]`, each
with `metrics` and `requests` {successful, incomplete, errored}, one `GenerativeRequestStats`
a request), as guidellm/benchmark/schemas/ and guidellm/schemas/request_stats.py define it.
Each benchmark of the file (a sweep's rates) is one config."""

from __future__ import annotations

from typing import Any

from probe.session_store.peer_imports.peer_run import (
    PeerFile,
    PeerRequest,
    PeerRun,
    SummaryFigure,
)
from probe.session_store.peer_imports.values import Where

TOOL = "guidellm"
MEANINGS = {
    "id": "response_id: the id of the server's reply (its completion id), else guidellm's "
          "own request_id",
    "arrival_s": "info.timings.request_start (epoch seconds when guidellm sent it), from the "
                 "first request's",
    "latency_ms": "request_latency (s, shown here in ms): client, request_start → request_end",
    "ttft_ms": "time_to_first_token_ms: client, request sent → first chunk with a token's "
               "text read (a token that decodes to no text is not counted: its TTFT can end "
               "on a later token than the server's first)",
    "tpot_ms": "inter_token_latency_ms: (last token − first token) / (output tokens − 1), at "
               "the client: infertop's TPOT. guidellm's own time_per_output_token_ms counts "
               "the first token too (request start → last token / output tokens): it is in "
               "the summary, not here",
    "input_tokens": "prompt_tokens: the server's usage where it sent one, else guidellm's count",
    "output_tokens": "output_tokens: the server's usage where it sent one, else one a "
                     "streamed iteration",
}
# GenerativeMetrics' distributions kept in the summary, with their units
SUMMARY_METRICS = {
    "request_latency": ("s", "client: request start → end"),
    "time_to_first_token_ms": ("ms", "client: request start → first token"),
    "inter_token_latency_ms": ("ms", "client: (last − first token) / (tokens − 1), infertop's "
                                     "TPOT"),
    "time_per_output_token_ms": ("ms", "client: (last token − request start) / tokens: "
                                       "includes the first token, not infertop's TPOT"),
    "requests_per_second": ("req/s", ""),
    "output_tokens_per_second": ("tokens/s", ""),
    "request_concurrency": ("requests", ""),
}
STATUSES = ("successful", "incomplete", "errored")


def is_report(document: Any) -> bool:
    return type(document) is dict and "benchmarks" in document and (
        "metadata" in document or "args" in document)


def read_report(document: dict[str, Any], source: str) -> PeerFile:
    at = Where(source, TOOL)
    metadata = document.get("metadata")
    version = metadata.get("guidellm_version") if type(metadata) is dict else None
    benchmarks = at.items(document["benchmarks"], "benchmarks")
    if not benchmarks:
        raise at.refuse("benchmarks", "holds no benchmark")
    runs, model = [], None
    for index, raw in enumerate(benchmarks):
        where = f"benchmarks[{index}]"
        benchmark = at.obj(raw, where)
        model = model or _model(benchmark)
        requests: list[PeerRequest] = []
        breakdown = at.obj(at.key(benchmark, "requests", where), f"{where}.requests")
        for status in STATUSES:
            listed = breakdown.get(status) or []
            for number, item in enumerate(at.items(listed, f"{where}.requests.{status}")):
                requests.append(_request(at, item, f"{where}.requests.{status}[{number}]",
                                         status))
        runs.append(PeerRun(_name(benchmark, index), tuple(requests),
                            _summary(at, benchmark.get("metrics"), f"{where}.metrics")))
    per_request = any(run.requests for run in runs)
    return PeerFile(TOOL, version if type(version) is str else None, "benchmarks.json", model,
                    tuple(runs), MEANINGS, per_request=per_request)


def _name(benchmark: dict[str, Any], index: int) -> str:
    config = benchmark.get("config")
    strategy = config.get("strategy") if type(config) is dict else None
    if type(strategy) is dict and type(strategy.get("type_")) is str:
        rate = strategy.get("rate")
        return strategy["type_"] + (f"@{rate}" if type(rate) in (int, float) else "")
    return f"benchmark {index + 1}"


def _model(benchmark: dict[str, Any]) -> str | None:
    config = benchmark.get("config")
    for holder in (config, config.get("backend") if type(config) is dict else None):
        if type(holder) is dict and type(holder.get("model")) is str:
            return holder["model"]
    return None


def _request(at: Where, raw: Any, where: str, status: str) -> PeerRequest:
    item = at.obj(raw, where)
    info = at.obj(at.key(item, "info", where), f"{where}.info")
    timings = at.obj(at.key(info, "timings", f"{where}.info"), f"{where}.info.timings")
    start = timings.get("request_start")
    if start is None:
        start = timings.get("resolve_start")
    start = at.number(start, f"{where}.info.timings.request_start", high=1e13)
    end = timings.get("request_end")
    if end is None:
        end = timings.get("resolve_end")
    end = at.number(end, f"{where}.info.timings.request_end", low=start, high=1e13)
    request_id = at.optional_text(item.get("response_id"), f"{where}.response_id") or \
        at.text(at.key(item, "request_id", where), f"{where}.request_id")
    ttft = at.optional_number(item.get("time_to_first_token_ms"),
                              f"{where}.time_to_first_token_ms")
    tpot = at.optional_number(item.get("inter_token_latency_ms"),
                              f"{where}.inter_token_latency_ms")
    error = None
    if status != "successful":
        detail = at.optional_text(info.get("error"), f"{where}.info.error")
        error = f"{status}: {detail}" if detail else status
    return PeerRequest(
        id=request_id, start_s=start, latency_ms=(end - start) * 1e3, ttft_ms=ttft,
        tpot_ms=tpot,
        input_tokens=at.optional_count(item.get("prompt_tokens"), f"{where}.prompt_tokens") or 0,
        output_tokens=at.optional_count(item.get("output_tokens"),
                                        f"{where}.output_tokens") or 0,
        error=error)


def _summary(at: Where, metrics: Any, where: str) -> tuple[SummaryFigure, ...]:
    if type(metrics) is not dict:
        return ()
    figures = []
    for name, (unit, means) in SUMMARY_METRICS.items():
        summary = metrics.get(name)
        successful = summary.get("successful") if type(summary) is dict else None
        if type(successful) is not dict:
            continue
        percentiles = successful.get("percentiles")
        picked = {"mean": successful.get("mean"), "median": successful.get("median"),
                  **({f"p{k[1:]}": percentiles.get(k) for k in ("p95", "p99")}
                     if type(percentiles) is dict else {}),
                  "max": successful.get("max")}
        for stat, value in picked.items():
            if value is not None:
                figures.append(SummaryFigure(f"{name}.successful.{stat}",
                                             at.number(value, f"{where}.{name}.successful."
                                                              f"{stat}", low=-1e15),
                                             unit, means))
    return tuple(figures)
