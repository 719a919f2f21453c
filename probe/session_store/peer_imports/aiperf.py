"""NVIDIA AIPerf's per-request export `profile_export.jsonl` (one `MetricRecordInfo` a line:
`metadata`, `metrics` as {"value", "unit"}, `error`) and its summary
`profile_export_aiperf.json` (one {"unit", "avg", "p50", …} per metric), as aiperf/common/
models/record_models.py and export_models.py define them. The summary beside the records is
read too where it sits in the same folder."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from probe.common.textio import JsonProblem, parse_json, read_text
from probe.session_store.peer_imports.peer_run import (
    PeerFile,
    PeerRequest,
    PeerRun,
    SummaryFigure,
)
from probe.session_store.peer_imports.values import TO_MS, Where

TOOL = "AIPerf"
SUMMARY_FILE = "profile_export_aiperf.json"
MEANINGS = {
    "id": "metadata.x_request_id: the X-Request-ID header AIPerf sent with the request",
    "arrival_s": "metadata.request_start_ns (time.time_ns() when AIPerf sent it), from the "
                 "first request's",
    "latency_ms": "metadata.request_end_ns − request_start_ns: client, request sent → "
                  "response read whole. AIPerf's own request_latency ends at the last chunk "
                  "with text, earlier where the last tokens decode to none (it is in the "
                  "summary)",
    "ttft_ms": "time_to_first_token: client, request sent → first chunk with text read "
               "(streaming only); a token that decodes to no text (a special token, a byte "
               "that completes no character) is no content to AIPerf, so its TTFT can end on "
               "a later token than the server's first",
    "tpot_ms": "inter_token_latency: (request_latency − time_to_first_token) / "
               "(output_sequence_length − 1), at the client: infertop's TPOT, ending at the "
               "last chunk read",
    "input_tokens": "input_sequence_length: the prompt's tokens by AIPerf's tokenizer",
    "output_tokens": "output_sequence_length: the reply's tokens by AIPerf's tokenizer (the "
                     "server's usage where AIPerf was told to use it)",
}
# the summary's per-metric statistics AIPerf writes (JsonMetricResult)
STATS = ("avg", "min", "max", "std", "p1", "p5", "p10", "p25", "p50", "p75", "p90", "p95",
         "p99")
# the metrics a reader looks for first: saved first, so `snapshot show` lists them first
HEADLINE = ("request_latency", "time_to_first_token", "inter_token_latency",
            "request_throughput", "output_token_throughput", "request_count",
            "error_request_count", "benchmark_duration")


def is_records(first_line: Any) -> bool:
    return type(first_line) is dict and "metadata" in first_line and "metrics" in first_line


def is_summary(document: Any) -> bool:
    return type(document) is dict and ("input_config" in document or any(
        type(v) is dict and "unit" in v and ("avg" in v or "p50" in v)
        for v in document.values()))


def read_records(path: Path, lines: list[str], source: str) -> PeerFile:
    """profile_export.jsonl's lines; its folder's profile_export_aiperf.json, where present,
    adds the summary."""
    at = Where(source, TOOL)
    requests: list[PeerRequest] = []
    skipped: dict[str, int] = {}
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        raw = _parse(at, line, f"line {number}")
        phase = at.obj(raw, f"line {number}").get("metadata", {})
        if type(phase) is dict and phase.get("benchmark_phase") == "warmup":
            skipped["warmup"] = skipped.get("warmup", 0) + 1
            continue
        requests.append(_request(at, raw, f"line {number}"))
    if not requests:
        raise at.refuse("the file", "holds no profiling record")
    summary: tuple[SummaryFigure, ...] = ()
    model: str | None = None
    version: str | None = None
    beside = path.parent / SUMMARY_FILE
    if beside.is_file():
        summary_doc = at.obj(_parse(at, read_text(beside), SUMMARY_FILE), SUMMARY_FILE)
        summary, model, version = _summary(Where(f"{source} (beside it, {SUMMARY_FILE})",
                                                 TOOL), summary_doc)
    return PeerFile(TOOL, version, "profile_export.jsonl", model,
                    (PeerRun("profiling", tuple(requests), summary, skipped),),
                    MEANINGS, per_request=True)


def read_summary(document: dict[str, Any], source: str) -> PeerFile:
    summary, model, version = _summary(Where(source, TOOL), document)
    if not summary:
        raise Where(source, TOOL).refuse("the file", "holds no metric with a unit and a value")
    return PeerFile(TOOL, version, SUMMARY_FILE, model, (PeerRun("profiling", (), summary),),
                    MEANINGS, per_request=False)


def _parse(at: Where, text: str, where: str) -> Any:
    try:
        return parse_json(text)
    except JsonProblem as exc:
        raise at.refuse(where, str(exc)) from None


def _request(at: Where, raw: dict[str, Any], where: str) -> PeerRequest:
    meta = at.obj(at.key(raw, "metadata", where), f"{where}.metadata")
    metrics = at.obj(raw.get("metrics") or {}, f"{where}.metrics")
    start_ns = at.number(at.key(meta, "request_start_ns", f"{where}.metadata"),
                         f"{where}.metadata.request_start_ns", high=1e20)
    at.number(at.key(meta, "request_end_ns", f"{where}.metadata"),   # checked; its span
              f"{where}.metadata.request_end_ns", low=start_ns, high=1e20)   # is taken below
    request_id = at.optional_text(meta.get("x_request_id"), f"{where}.metadata.x_request_id") \
        or f"aiperf-{at.count(meta.get('session_num'), f'{where}.metadata.session_num')}"

    def duration(name: str) -> float | None:
        metric = metrics.get(name)
        if metric is None:
            return None
        metric = at.obj(metric, f"{where}.metrics.{name}")
        return at.to_ms(at.key(metric, "value", f"{where}.metrics.{name}"),
                        metric.get("unit"), f"{where}.metrics.{name}.value")

    def tokens(*names: str) -> int:
        for name in names:
            metric = metrics.get(name)
            if metric is not None:
                metric = at.obj(metric, f"{where}.metrics.{name}")
                return at.count(at.key(metric, "value", f"{where}.metrics.{name}"),
                                f"{where}.metrics.{name}.value")
        return 0

    error = raw.get("error")
    if error is not None:
        error = at.obj(error, f"{where}.error")
        error = " ".join(str(error.get(k)) for k in ("code", "type", "message")
                         if error.get(k) is not None) or "error"
    return PeerRequest(
        id=request_id, start_s=start_ns / 1e9,
        # in whole ns before the division: as floats, epoch ns keep only ~256 ns steps
        latency_ms=(meta["request_end_ns"] - meta["request_start_ns"]) / 1e6,
        ttft_ms=duration("time_to_first_token"), tpot_ms=duration("inter_token_latency"),
        input_tokens=tokens("input_sequence_length", "error_isl"),
        output_tokens=tokens("output_sequence_length", "output_token_count"), error=error)


def _summary(at: Where, document: dict[str, Any]
             ) -> tuple[tuple[SummaryFigure, ...], str | None, str | None]:
    figures = []
    names = sorted(document, key=lambda n: HEADLINE.index(n) if n in HEADLINE else len(HEADLINE))
    for name in names:
        value = document[name]
        if type(value) is not dict or "unit" not in value:
            continue
        unit = at.text(value["unit"], f"{name}.unit")
        for stat in STATS:
            if value.get(stat) is not None:
                number = at.number(value[stat], f"{name}.{stat}", low=-1e15)
                figures.append(SummaryFigure(f"{name}.{stat}", number, unit,
                                             _summary_meaning(name, unit)))
    config = document.get("input_config")
    model = None
    if type(config) is dict:    # 0.13: models.items[].name; earlier: endpoint.model_names
        models, endpoint = config.get("models"), config.get("endpoint")
        items = models.get("items") if type(models) is dict else None
        listed = ([i.get("name") for i in items if type(i) is dict] if type(items) is list
                  else endpoint.get("model_names") if type(endpoint) is dict else None)
        if type(listed) is list and listed and type(listed[0]) is str:
            model = listed[0]
    version = document.get("aiperf_version")
    return tuple(figures), model, version if type(version) is str else None


def _summary_meaning(name: str, unit: str) -> str:
    if name == "inter_token_latency":
        return "client: (latency − TTFT) / (output tokens − 1) per request, in " + unit
    if name == "time_to_first_token":
        return "client: request sent → first content chunk, in " + unit
    if name == "request_latency":
        return "client: request sent → last chunk, in " + unit
    return f"AIPerf's {name}, in {unit}" + (" (a duration)" if unit in TO_MS else "")
