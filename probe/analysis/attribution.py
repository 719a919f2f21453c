"""The doctor's attribution: the tail of a set of records (the served requests at or above the
set's p95 latency) and its total latency split into disjoint causes that add up to it exactly.

One function, `attribute`, serves every view: the live window, a config's segment, a bench run.
Each tail request's latency is cut at the engine's marks (probe/analysis/timeline.py) and every
piece goes to exactly one cause:

  compile     a compile ran (any phase; the engine thread serves nothing meanwhile)
  batch_wait  dynamic batching's gathering of a batch, and a row's wait for its batch's
              longest row after its own last token
  kv_wait     paged KV: taken from the queue, waiting for blocks (RequestRecord.kv_wait_ms)
  queue       the rest of the wait between arrival and the start of its service
  padding     (padded − real) / padded of its encode and decode time, compile taken out
  encode      the rest of its encode time
  decode      the rest of its decode time; split in the evidence into what the roofline says
              the weights cost (roofline ms per step × its tokens) and the per-step overhead
  other       latency_ms less all of the above (what no mark accounts for)
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Callable, Mapping, Sequence

from probe.analysis.stats import summarize
from probe.analysis.timeline import (
    LIMIT,
    SUB_KINDS,
    CompileSpan,
    Span,
    compile_spans,
    gather_start_s,
    overlap_s,
    phases,
    waited_on,
)
from probe.common.units import fmt_ms
from probe.contract.records import CompileEvent, KVPool, RequestRecord

CAUSES = ("queue", "compile", "padding", "batch_wait", "kv_wait", "encode", "decode", "other")
SHOWN_IDS = 5


@dataclass(frozen=True)
class RequestSplit:
    """One tail request's latency by cause (ms; every cause present; they add up to it)."""
    request_id: str
    latency_ms: float
    ms: Mapping[str, float]
    compile_ms: Mapping[str, float]         # the compile cause by sub-kind
    decode_weights_ms: float                # of the decode cause: the roofline's weight reads
    batch_gather_ms: float                  # of batch_wait: the window; the rest is row wait
    events: tuple[CompileEvent, ...]        # compiles it waited on, and fallback/limit markers


@dataclass(frozen=True)
class Cause:
    cause: str
    ms: float
    share: float                # of the tail's total latency
    requests: int               # tail requests it touched
    evidence: str

    def as_dict(self) -> dict:
        return {"cause": self.cause, "share": self.share, "requests": self.requests,
                "evidence": self.evidence}


@dataclass(frozen=True)
class Failures:
    requests: int
    reasons: tuple[tuple[str, int], ...] = ()      # (error, how many), most frequent first

    def text(self) -> str:
        return "; ".join(f"{n}× {reason}" for reason, n in self.reasons)


@dataclass(frozen=True)
class Attribution:
    requests: int                       # in the tail
    latency_p95_ms: float | None        # the set's p95 (the tail's threshold)
    total_ms: float                     # the tail's latency added up
    causes: tuple[Cause, ...]           # every cause, largest share first
    failed: Failures
    served: int = 0                     # served requests in the set
    splits: tuple[RequestSplit, ...] = field(default=(), repr=False)

    def cause(self, name: str) -> Cause:
        return next(c for c in self.causes if c.cause == name)

    @property
    def top(self) -> Cause | None:
        return self.causes[0] if self.requests and self.causes[0].ms > 0 else None

    def as_dict(self) -> dict:
        return {"requests": self.requests, "latency_p95_ms": self.latency_p95_ms,
                "causes": [c.as_dict() for c in self.causes]}


def tail(records: Sequence[RequestRecord]) -> tuple[tuple[RequestRecord, ...], float | None]:
    """The served requests at or above the set's p95 latency (stats.summarize's percentile)."""
    ok = [r for r in records if r.ok]
    p95 = summarize(r.latency_ms for r in ok).p95
    return (tuple(r for r in ok if r.latency_ms >= p95) if p95 is not None else ()), p95


def padding_fraction(record: RequestRecord) -> float:
    if record.padded_tokens <= 0:
        return 0.0
    return min(max((record.padded_tokens - record.input_tokens) / record.padded_tokens, 0.0), 1.0)


def _minus_compile(span: Span, spans: Sequence[CompileSpan]) -> float:
    """The seconds of a span outside compiles."""
    return span.seconds - sum(overlap_s(span, spans).values())


def split_request(record: RequestRecord, spans: Sequence[CompileSpan],
                  markers: Sequence[CompileEvent] = (), *, gather_from_s: float | None = None,
                  roofline_ms: float | None = None) -> RequestSplit:
    """One request's latency by cause. `gather_from_s`: when dynamic batching began gathering
    its batch (None: not dynamically batched); `roofline_ms`: its config's roofline per step."""
    p = phases(record)
    compile_ms = {kind: 0.0 for kind in SUB_KINDS}
    for part in (p.wait, p.encode, p.decode, p.row_wait):
        for kind, seconds in overlap_s(part, spans).items():
            compile_ms[kind] = compile_ms.get(kind, 0.0) + seconds * 1e3
    wait_free = _minus_compile(p.wait, spans)
    gather = kv = 0.0
    if gather_from_s is not None:
        gather = _minus_compile(Span(max(gather_from_s, p.wait.start_s), p.wait.end_s), spans)
    elif record.kv_wait_ms > 0:
        kv = _minus_compile(Span(max(p.wait.end_s - record.kv_wait_ms / 1e3, p.wait.start_s),
                                 p.wait.end_s), spans)
    fraction = padding_fraction(record)
    encode_free = _minus_compile(p.encode, spans)
    decode_free = _minus_compile(p.decode, spans)
    row_free = _minus_compile(p.row_wait, spans)
    decode_ms = decode_free * (1 - fraction) * 1e3
    ms = {
        "queue": (wait_free - gather - kv) * 1e3,
        "compile": sum(compile_ms.values()),
        "padding": (encode_free + decode_free) * fraction * 1e3,
        "batch_wait": (gather + row_free) * 1e3,
        "kv_wait": kv * 1e3,
        "encode": encode_free * (1 - fraction) * 1e3,
        "decode": decode_ms,
    }
    ms["other"] = record.latency_ms - sum(ms.values())
    weights = 0.0 if roofline_ms is None else min(decode_ms, roofline_ms * record.output_tokens)
    return RequestSplit(record.id, record.latency_ms, ms, compile_ms, weights, gather * 1e3,
                        waited_on(record, spans, markers))


def gather_starts(records: Sequence[RequestRecord]) -> dict[str, float]:
    """Request id → when dynamic batching began gathering its batch. A batch is the records of
    one config that share a start; the batch before it is the latest end at or before it."""
    by_start: dict[tuple[str, float], list[RequestRecord]] = {}
    for r in records:
        by_start.setdefault((r.config_id, r.start_s), []).append(r)
    ends = [r.end_s for r in records]
    starts = {}
    for (_, start), members in by_start.items():
        g = gather_start_s(start, min(m.arrival_s for m in members), ends)
        starts.update({m.id: g for m in members})
    return starts


def attribute(records: Sequence[RequestRecord], events: Sequence[CompileEvent] = (), *,
              dynamic_configs: frozenset[str] = frozenset(),
              roofline_ms: Mapping[str, float] | None = None,
              kv_pools: Mapping[str, KVPool] | None = None,
              bucket_edges: Sequence[int] = (),
              select: Callable[[Sequence[RequestRecord]], tuple[tuple[RequestRecord, ...],
                                                                float | None]] = tail
              ) -> Attribution:
    """The tail of `records` and its latency by cause. `events`: the session's compile events
    (all of them: a compile of any config blocks whoever waits); `dynamic_configs`: the configs
    served with batching=dynamic; `roofline_ms`: config id → its roofline per decode step.
    `select` picks the requests to explain and their threshold: the p95 tail by default; the
    hook for an SLO (issue #24), where the requests outside it are the ones to explain."""
    chosen, p95 = select(records)
    spans = compile_spans(events)
    markers = tuple(e for e in events if e.kind in ("fallback", "limit"))
    gathers = gather_starts([r for r in records if r.config_id in dynamic_configs])
    roofline_ms = roofline_ms or {}
    splits = tuple(split_request(r, spans, markers, gather_from_s=gathers.get(r.id),
                                 roofline_ms=roofline_ms.get(r.config_id)) for r in chosen)
    total = sum(r.latency_ms for r in chosen)
    causes = [_cause(name, chosen, splits, total, kv_pools or {}, bucket_edges)
              for name in CAUSES]
    causes.sort(key=lambda c: (-c.ms, CAUSES.index(c.cause)))
    return Attribution(requests=len(chosen), latency_p95_ms=p95, total_ms=total,
                       causes=tuple(causes), failed=failures(records),
                       served=sum(r.ok for r in records), splits=splits)


def failures(records: Sequence[RequestRecord]) -> Failures:
    counts = Counter((r.error or "unknown error")[:120] for r in records if not r.ok)
    return Failures(sum(counts.values()), tuple(sorted(counts.items(), key=lambda kv: -kv[1])))


def _touched(name: str, split: RequestSplit) -> bool:
    if name == "compile":
        return split.ms[name] > 0 or any(e.kind in ("fallback", "limit") for e in split.events)
    return split.ms[name] > 1e-9


def _ids(ids: Sequence[str]) -> str:
    shown = ", ".join(ids[:SHOWN_IDS])
    return shown + (f" … (+{len(ids) - SHOWN_IDS})" if len(ids) > SHOWN_IDS else "")


def _cause(name: str, chosen: Sequence[RequestRecord], splits: Sequence[RequestSplit],
           total: float, pools: Mapping[str, KVPool], edges: Sequence[int]) -> Cause:
    ms = sum(s.ms[name] for s in splits)
    touched = [(r, s) for r, s in zip(chosen, splits) if _touched(name, s)]
    evidence = _EVIDENCE[name](touched, pools, edges) if touched else "none in the tail"
    if touched:
        evidence += f"; requests {_ids([r.id for r, _ in touched])}"
    return Cause(name, ms, ms / total if total > 0 else 0.0, len(touched), evidence)


Touched = Sequence[tuple[RequestRecord, RequestSplit]]


def _queue_evidence(touched: Touched, pools, edges) -> str:
    return f"waited {_range_ms([s.ms['queue'] for _, s in touched])} behind earlier requests"


def _range_ms(values: Sequence[float]) -> str:
    low, high = fmt_ms(min(values)), fmt_ms(max(values))
    return low if low == high else f"{low}–{high}"


def _compile_evidence(touched: Touched, pools, edges) -> str:
    by_kind: dict[str, float] = {}
    for _, s in touched:
        for kind, ms in s.compile_ms.items():
            by_kind[kind] = by_kind.get(kind, 0.0) + ms
    parts = [f"{kind} {fmt_ms(ms)}" for kind, ms in sorted(by_kind.items(), key=lambda kv: -kv[1])
             if ms > 0]
    events = list(dict.fromkeys(e for _, s in touched for e in s.events))
    limits = [e for e in events if e.kind == "limit"]
    if limits:
        functions = ", ".join(sorted({e.function for e in limits}))
        parts.append(f"{LIMIT} hit {len(limits)}× ({functions})")
    timed = [e for e in events if e.kind not in ("fallback", "limit")]
    named = [f"{e.function} {e.compile_id} {(e.duration_s or 0):.1f} s"
             + (f" [{e.reason}]" if e.reason else "") for e in timed[:4]]
    if len(timed) > 4:
        named.append(f"… (+{len(timed) - 4})")
    fallbacks = [e for e in events if e.kind == "fallback"]
    if fallbacks:
        named.append(f"fallback: {fallbacks[0].reason or '?'}")     # whole: never cut
    return "; ".join(parts + (["waited on " + ", ".join(named)] if named else []))


def _padding_evidence(touched: Touched, pools, edges) -> str:
    real = [r.input_tokens for r, _ in touched]
    padded = sorted({r.padded_tokens for r, _ in touched})
    waste = sum(r.padded_tokens - r.input_tokens for r, _ in touched) / max(
        sum(r.padded_tokens for r, _ in touched), 1)
    text = (f"inputs of {_range(real)} tokens ran at {', '.join(map(str, padded))} "
            f"({100 * waste:.0f}% pad positions)")
    return text + (f"; bucket edges {', '.join(map(str, edges))}" if edges else "")


def _batch_evidence(touched: Touched, pools, edges) -> str:
    gather = sum(s.batch_gather_ms for _, s in touched)
    rows = sum(s.ms["batch_wait"] for _, s in touched) - gather
    largest = max(r.batch_size for r, _ in touched)
    return (f"gathering a batch {fmt_ms(gather)}, waiting for the batch's longest row "
            f"{fmt_ms(rows)}; batches of up to {largest:g}")


def _kv_evidence(touched: Touched, pools: Mapping[str, KVPool], edges) -> str:
    texts = []
    for config_id in dict.fromkeys(r.config_id for r, _ in touched):
        pool = pools.get(config_id)
        if pool is not None:
            texts.append(f"{config_id} pool {pool.blocks_total} blocks × {pool.block_tokens} "
                         f"tokens, peak {pool.blocks_peak} held "
                         f"({100 * pool.blocks_peak / max(pool.blocks_total, 1):.0f}%)")
    waits = [s.ms["kv_wait"] for _, s in touched]
    return "; ".join([f"waited {fmt_ms(max(waits))} at most for KV blocks", *texts])


def _encode_evidence(touched: Touched, pools, edges) -> str:
    return f"inputs of {_range([r.input_tokens for r, _ in touched])} tokens"


def _range(values: Sequence[int]) -> str:
    return str(min(values)) if min(values) == max(values) else f"{min(values)}–{max(values)}"


def _decode_evidence(touched: Touched, pools, edges) -> str:
    decode = sum(s.ms["decode"] for _, s in touched)
    tokens = sum(r.output_tokens for r, _ in touched)
    weights = sum(s.decode_weights_ms for _, s in touched)
    text = (f"the tail's decode, compile excluded: {tokens} tokens, "
            f"{fmt_ms(decode / max(tokens, 1))} a token")
    if weights > 0:
        # no multiple here: "× the roofline" is the config's TPOT figure (tpot_figure.py)
        text += (f"; weights (the roofline) {fmt_ms(weights)}, per-step overhead "
                 f"{fmt_ms(decode - weights)} ({100 * (decode - weights) / decode:.0f}% of it)")
    else:
        text += "; no roofline measured: weights and overhead not split"
    return text


def _other_evidence(touched: Touched, pools, edges) -> str:
    return "time between the engine's marks that no phase accounts for"


_EVIDENCE = {"queue": _queue_evidence, "compile": _compile_evidence, "padding": _padding_evidence,
             "batch_wait": _batch_evidence, "kv_wait": _kv_evidence,
             "encode": _encode_evidence, "decode": _decode_evidence, "other": _other_evidence}
