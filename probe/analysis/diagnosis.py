"""The doctor: for each config's segment (or any set of records) the tail's causes, the
machine-level findings, a verdict a person reads first, and the next step; for the session, the
production-readiness checklist. Torch-free; every view (the dashboard, `infertop doctor`, the
session JSON, bench's report, `snapshot compare`) reads it from here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from probe.analysis.attribution import Attribution, attribute, gather_starts, split_request
from probe.analysis.break_even_live import break_even_status
from probe.analysis.findings import (
    Finding,
    cpu_contention,
    drift,
    energy_padding,
    failed,
    host_bound,
    memory_pressure,
    recompile_limit,
    saturation,
)
from probe.analysis.guard_groups import GuardGroup, guard_groups
from probe.analysis.load_figures import Load, records_load
from probe.analysis.next_step import (
    NextStep,
    SegmentFacts,
    next_step,
    p95_without,
    prediction_held,
)
from probe.analysis.stats import segment_stats, session_segments
from probe.analysis.timeline import compile_spans
from probe.analysis.tpot_figure import config_tpot
from probe.common.units import fmt_ms, fmt_ratio
from probe.contract.device_sample import DeviceSample
from probe.contract.figures import ConfigTpot, SegmentStats
from probe.contract.options import OptConfig
from probe.contract.records import RooflineStatus
from probe.contract.session import SessionData

HEALTHY_WORK_SHARE = 0.75       # encode + decode of the tail at least this: it is the work itself
UNHEALTHY_FINDINGS = frozenset({"saturation", "memory_pressure", "recompile_limit"})
LABELS = {"queue": "queue wait", "compile": "compile stall", "padding": "padding",
          "batch_wait": "batch wait", "kv_wait": "KV wait", "encode": "encode",
          "decode": "decode", "other": "other"}
PHRASES = {"queue": "waited in the queue", "padding": "ran on pad positions",
           "batch_wait": "waited for a batch to fill or for its longest row",
           "kv_wait": "waited for KV blocks", "encode": "were encoding",
           "decode": "were decoding", "other": "spent time no mark accounts for"}


@dataclass(frozen=True)
class DoctorContext:
    """What a session JSON keeps beside its records that the doctor reads."""
    bucket_edges: tuple[int, ...] = ()
    max_batch: int = 1
    device_sample: DeviceSample | None = None
    roofline: RooflineStatus | None = None
    cpu_count: int | None = None
    saved: str | None = None            # where the session is saved (None: not yet)
    load: Load | None = None            # the live view's offered load and capacity (live only)
    asked: int | None = None            # requests the run was asked to serve (trace.asked)


def context_from_document(document: Mapping[str, Any],
                          live_parts: tuple[DeviceSample | None, RooflineStatus | None],
                          saved: str | None = None) -> DoctorContext:
    """`live_parts`: the device sample and roofline it was saved with (snapshot's
    saved_live_parts, read by the caller: the snapshot module builds on this one)."""
    settings = document.get("settings", {})
    edges = settings.get("bucket_edges", [])
    sample, roofline = live_parts
    cpu_count = document.get("environment", {}).get("cpu_count")
    max_batch = settings.get("max_batch", 1)
    trace = document.get("trace")
    asked = trace.get("asked") if isinstance(trace, Mapping) else None
    return DoctorContext(
        asked=asked if isinstance(asked, int) and not isinstance(asked, bool) and asked >= 0
        else None,
        bucket_edges=tuple(e for e in edges if isinstance(e, int)) if isinstance(edges, list)
        else (), max_batch=max_batch if isinstance(max_batch, int) and max_batch > 0 else 1,
        device_sample=sample, roofline=roofline,
        cpu_count=cpu_count if isinstance(cpu_count, int) else None, saved=saved)


@dataclass(frozen=True)
class SegmentDiagnosis:
    config_id: str
    tail: Attribution
    findings: tuple[Finding, ...]
    verdict: str
    next_step: NextStep | None
    healthy: bool = False
    tpot: ConfigTpot | None = None      # the config's TPOT, as the latency panel prints it
    guard_groups: tuple[GuardGroup, ...] = ()   # its recompiles by guard, each with its fix

    def as_dict(self) -> dict:
        return {"config_id": self.config_id, "tail": self.tail.as_dict(),
                "findings": [f.as_dict() for f in self.findings], "verdict": self.verdict,
                "next_step": None if self.next_step is None else self.next_step.as_dict(),
                "guard_groups": [g.as_dict() for g in self.guard_groups]}


def roofline_for(options: OptConfig, roofline: RooflineStatus | None) -> float | None:
    """The saved roofline is the served config's: it applies to configs of the same precision."""
    if roofline is None:
        return None
    precision = options.precision + ("" if options.quant == "off" else f"+{options.quant}")
    return roofline.roofline_ms if roofline.precision == precision else None


def diagnose(data: SessionData, config_id: str, ctx: DoctorContext = DoctorContext(), *,
             records: Sequence | None = None, stats: SegmentStats | None = None,
             previous: SegmentDiagnosis | None = None,
             previous_options: OptConfig | None = None,
             segments: Sequence[SegmentStats] | None = None,
             live_findings: Sequence[Finding] = ()) -> SegmentDiagnosis:
    """One config's segment (or `records`, e.g. the live window, served under it).
    `segments`: the session's, when the caller has them already; `live_findings`: what the
    serving loop sees that records do not yet (a queue growing now), unless already found."""
    entry = data.configs.get(config_id)
    options = entry.options if entry else OptConfig()
    mine = list(records if records is not None else
                (r for r in data.records if r.config_id == config_id))
    events = [e for e in data.events if e.config_id == config_id]
    # the session's own figures of it (warm over the whole session, its SLO, its energy): the
    # segment every view shows
    stats = stats or next((s for s in (segments or session_segments(data))
                           if s.config_id == config_id), None) or segment_stats(
        config_id, mine, events, [b for b in data.breaks if b.config_id == config_id],
        data.references, data.kv_pools.get(config_id), slo=data.slo,
        energy=data.energy.get(config_id))
    dynamic = frozenset(cid for cid, e in data.configs.items() if e.options.batching == "dynamic")
    roofline = roofline_for(options, ctx.roofline)
    edges = ctx.bucket_edges if options.bucketing == "on" else ()
    result = attribute(mine, data.events, dynamic_configs=dynamic,
                       roofline_ms={config_id: roofline} if roofline else {},
                       kv_pools=data.kv_pools, bucket_edges=edges)
    spans = compile_spans(data.events)
    markers = tuple(e for e in data.events if e.kind in ("fallback", "limit"))
    gathers = gather_starts(mine) if config_id in dynamic else {}
    served = [split_request(r, spans, markers, gather_from_s=gathers.get(r.id),
                            roofline_ms=roofline) for r in mine if r.ok]
    findings = [f for f in (
        saturation(mine, ctx.load), cpu_contention(ctx.device_sample, ctx.cpu_count),
        memory_pressure(mine, ctx.device_sample, data.kv_pools.get(config_id)), drift(stats),
        recompile_limit(events), failed(mine), host_bound(data.batch_steps.get(config_id)),
        energy_padding(stats.energy))
        if f is not None]
    findings += [f for f in live_findings if f.finding not in {g.finding for g in findings}]
    if previous is not None and previous.next_step is not None and previous_options is not None:
        findings += _prediction(previous, previous_options, options, stats)
    load = ctx.load if ctx.load is not None else records_load(mine, f"{config_id}'s arrivals")
    others = {e.options: s for s in (session_segments(data) if segments is None else segments)
              for e in [data.configs.get(s.config_id)] if e is not None}
    facts = SegmentFacts(options=options, stats=stats, attribution=result, served=served,
                         records=mine, events=events, offered_rps=load.offered_rps,
                         capacity_rps=load.capacity_rps, bucket_edges=ctx.bucket_edges,
                         max_batch=ctx.max_batch, others=others,
                         break_even=break_even_status(data, options, config_id))
    healthy = _healthy(result, findings)
    top = result.top
    step = next_step(facts, top.cause if top else None, healthy=healthy)
    tpot = config_tpot(data.records, data.events, config_id,
                       ctx.roofline if roofline is not None else None)
    return SegmentDiagnosis(config_id, result, tuple(findings),
                            verdict(result, facts, findings, healthy, step, tpot), step, healthy,
                            tpot, guard_groups(events, mine, ctx.bucket_edges,
                                              bucketed=options.bucketing == "on"))


def _healthy(result: Attribution, findings: Sequence[Finding]) -> bool:
    if result.top is None:
        return False
    work = result.cause("encode").share + result.cause("decode").share
    return (result.top.cause in ("encode", "decode") and work >= HEALTHY_WORK_SHARE
            and not any(f.finding in UNHEALTHY_FINDINGS for f in findings))


def _prediction(previous: SegmentDiagnosis, before: OptConfig, after: OptConfig,
                stats: SegmentStats) -> list[Finding]:
    step = previous.next_step
    if step is None:
        return []
    taken = all(getattr(after, k) == v != getattr(before, k) for k, v in step.options.items())
    if not taken:
        return []
    checked = prediction_held(step, stats)
    change = " ".join(f"{k}={v}" for k, v in step.options.items())
    if checked is None:
        return [Finding("prediction", f"{previous.config_id}'s next step ({change}) was taken; "
                                      f"nothing numeric to check yet")]
    held, text = checked
    return [Finding("prediction", f"{previous.config_id}'s next step ({change}) "
                                  f"{'held' if held else 'did not hold'}: {text}")]


def _compile_phrase(result: Attribution) -> str:
    kinds: dict[str, float] = {}
    for s in result.splits:
        for kind, ms in s.compile_ms.items():
            kinds[kind] = kinds.get(kind, 0.0) + ms
    parts = [f"{kind} {fmt_ms(ms / max(len(result.splits), 1))}"
             for kind, ms in sorted(kinds.items(), key=lambda kv: -kv[1]) if ms > 0]
    each = "" if len(result.splits) == 1 else "per request: "
    return f"waited on compiles ({each}" + ", ".join(parts) + ")" if parts else \
        "waited on compiles"


def verdict(result: Attribution, facts: SegmentFacts, findings: Sequence[Finding],
            healthy: bool, step: NextStep | None, tpot: ConfigTpot | None = None) -> str:
    """One sentence with numbers: what the tail is made of, and what to do about it."""
    failures = f"; {result.failed.requests} failed" if result.failed.requests else ""
    top = result.top
    if top is None:
        return f"no request served yet{failures}"
    p95 = fmt_ms(result.latency_p95_ms)
    share = f"{100 * top.share:.0f}% {LABELS[top.cause]}"
    if healthy:
        ratio = ""       # the roofline multiple is the config's TPOT figure, as every view's
        if top.cause == "decode" and tpot is not None and tpot.ratio is not None:
            ratio = f" (TPOT {fmt_ratio(tpot.ratio)} the roofline, {tpot.scope()})"
        return f"healthy: p95 {p95} is {share}{ratio}; no change advised{failures}"
    phrase = _compile_phrase(result) if top.cause == "compile" else PHRASES[top.cause]
    without = p95_without(facts, lambda s: s.ms[top.cause])
    who = ("the slowest request" if result.requests == 1 else
           f"{top.requests} of the {result.requests} slowest requests")
    text = f"p95 {p95}: {share} — {who} {phrase}; without it p95 would be {fmt_ms(without)}"
    saturated = next((f for f in findings if f.finding == "saturation"), None)
    if saturated is not None and top.cause != "queue":
        text += f"; saturated ({saturated.evidence.split(';')[0]})"
    if step is None and top.cause not in ("encode", "decode"):
        text += "; no option change in the registry addresses it"
    return text + failures


