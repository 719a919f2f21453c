"""The seed study's production-readiness checklist, every item checked from the session: pass,
fail or not yet, with its evidence and, short of a pass, what would complete it."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Sequence

from probe.analysis.diagnosis import DoctorContext, SegmentDiagnosis
from probe.analysis.findings import kv_headroom, offered_rps, peak_concurrency
from probe.analysis.load_figures import Load, records_load
from probe.analysis.stats import session_segments, summarize
from probe.common.units import fmt_bytes, fmt_ms, fmt_rate
from probe.contract.figures import SegmentStats
from probe.contract.options import OPTION_BY_KEY, OptConfig
from probe.contract.session import SessionData

MIN_REQUESTS = 20           # served requests before a p95 (and the traffic) means something
PEAK_LOAD = 0.9             # offered / capacity: the load reached the engine's peak
PASS, FAIL, NOT_YET = "pass", "fail", "not yet"


@dataclass(frozen=True)
class ChecklistItem:
    item: str
    status: str         # pass | fail | not yet
    evidence: str
    # the option changes its evidence names as the fix ((option, value), …), for the next step
    fix: tuple[tuple[str, str], ...] = ()

    def as_dict(self) -> dict:
        return {"item": self.item, "status": self.status, "evidence": self.evidence}

    def fix_text(self) -> str:
        """ "bucketing=on (press b)" """
        return " or ".join(f"{k}={v} ({_key(k)})" for k, v in self.fix)


def _key(option: str) -> str:
    return f"press {OPTION_BY_KEY[option].hotkey}"


def _options(data: SessionData, s: SegmentStats) -> OptConfig:
    entry = data.configs.get(s.config_id)
    return entry.options if entry else OptConfig()


def traffic(data: SessionData, concurrency: int, asked: int | None = None) -> ChecklistItem:
    """`asked`: the requests the run was asked to serve, when the session says (a stopped
    replay's 8 of 40, not 8 of the 20 a p95 needs)."""
    ok = [r for r in data.records if r.ok]
    name = "traffic measured (lengths, rates, concurrency)"
    if len(ok) < MIN_REQUESTS:
        of = max(asked, MIN_REQUESTS) if asked is not None else MIN_REQUESTS
        return ChecklistItem(name, NOT_YET, f"{len(ok)} of {of} requests served; let "
                                            f"the replay run")
    inputs = summarize(r.input_tokens for r in ok)
    outputs = summarize(r.output_tokens for r in ok)
    return ChecklistItem(name, PASS, (
        f"{len(ok)} requests: inputs p50 {inputs.p50:.0f} (max {inputs.max:.0f}) tokens, "
        f"outputs p50 {outputs.p50:.0f} (max {outputs.max:.0f}); offered "
        f"{fmt_rate(offered_rps(data.records), 'req/s')}, up to "
        f"{concurrency} at once"))


def bottleneck(diagnoses: Sequence[SegmentDiagnosis]) -> ChecklistItem:
    name = "bottleneck identified"
    named = [d for d in diagnoses if d.tail.top is not None]
    if not named:
        return ChecklistItem(name, NOT_YET, "no request served yet")
    return ChecklistItem(name, PASS, "; ".join(f"{d.config_id}: {d.verdict}" for d in named[-2:]))


def graph_breaks(data: SessionData, segments: Sequence[SegmentStats]) -> ChecklistItem:
    name = "graph breaks inspected"
    compiled = [s for s in segments if _options(data, s).compiled]
    if not compiled:
        return ChecklistItem(name, NOT_YET, f"no compiled segment: breaks show under compile "
                                            f"({_key('compile')})")
    text = "; ".join(f"{s.config_id}: {s.graph_breaks} breaks at {s.graph_break_sites} sites"
                     for s in compiled)
    if any(s.graph_breaks == 0 for s in compiled):
        return ChecklistItem(name, PASS, text)
    top = max(data.breaks, key=lambda b: b.count, default=None)
    where = f" (most at {top.location}: {top.reason[:60]})" if top else ""
    return ChecklistItem(name, FAIL, f"{text}{where}; decode=fullgraph compiles without breaks "
                                     f"({_key('decode')})", fix=(("decode", "fullgraph"),))


def dynamic_shapes(data: SessionData, segments: Sequence[SegmentStats],
                   ctx: DoctorContext) -> ChecklistItem:
    name = "dynamic shapes reduced"
    compiled = [s for s in segments if _options(data, s).compiled]
    if not compiled:
        return ChecklistItem(name, NOT_YET, f"no compiled segment ({_key('compile')})")
    limit = max(len(ctx.bucket_edges), 1)
    reduced = [s for s in compiled if s.recompiles <= limit and (
        _options(data, s).bucketing == "on" or _options(data, s).dynamic == "on"
        or s.recompiles == 0)]
    text = "; ".join(f"{s.config_id}: {s.recompiles} recompiles" for s in compiled)
    if reduced:
        return ChecklistItem(name, PASS, f"{text} (at most {limit} shapes)")
    latest = _options(data, compiled[-1])      # a fix the latest config has already is none
    fix = tuple((k, v) for k, v in (("bucketing", "on"), ("dynamic", "on"))
                if getattr(latest, k) != v)
    return ChecklistItem(name, FAIL, f"{text}: each new length compiles; bucketing=on "
                                     f"({_key('bucketing')}) or dynamic=on ({_key('dynamic')})",
                         fix=fix)


def kv_cache(data: SessionData, segments: Sequence[SegmentStats]) -> ChecklistItem:
    name = "KV cache benchmarked (latency and memory, on and off)"
    by = {v: [s for s in segments if _options(data, s).kv_cache == v and s.requests]
          for v in ("on", "off")}
    if by["on"] and by["off"]:
        return ChecklistItem(name, PASS, "; ".join(
            f"kv_cache={v} {s.config_id}: p50 {fmt_ms(s.latency_ms.p50)}, KV peak "
            f"{fmt_bytes(s.kv_cache_peak_bytes)}" for v in ("on", "off") for s in by[v][:1]))
    missing = "off" if by["on"] else "on"
    return ChecklistItem(name, NOT_YET, f"no segment with kv_cache={missing}; {_key('kv_cache')}")


def _ab_pair(data: SessionData, a: SegmentStats, b: SegmentStats) -> bool:
    """Whether a and b are a live A/B's two arms (either order): arm B's config carries arm
    A's id (ConfigEntry.ab_control), and a config with arm A's options is the other."""
    for arm, other in ((b, a), (a, b)):
        entry = data.configs.get(arm.config_id)
        control = data.configs.get(entry.ab_control or "") if entry is not None else None
        if control is not None and control.options == _options(data, other):
            return True
    return False


def one_change(data: SessionData, segments: Sequence[SegmentStats]) -> ChecklistItem:
    """Each config against the one before it changed one option. A live A/B's arms are judged
    as the A/B they are (the doctor's step, or the user's change, measured side by side), not
    as a change the user made from one config to the next."""
    name = "one change at a time"
    if len(segments) < 2:
        return ChecklistItem(name, NOT_YET, "one config served; change one option to compare")
    abs_ = []
    for a, b in zip(segments, segments[1:]):
        if _ab_pair(data, a, b):
            abs_.append(f"{a.config_id} ↔ {b.config_id}")
            continue
        oa, ob = _options(data, a), _options(data, b)
        changed = [f.name for f in fields(OptConfig) if getattr(oa, f.name) != getattr(ob, f.name)]
        if len(changed) != 1:
            return ChecklistItem(name, FAIL, f"{a.config_id} → {b.config_id} changed "
                                             f"{' and '.join(changed) or 'nothing'}; compare one "
                                             f"option at a time")
    ab_text = f" ({', '.join(abs_)}: an A/B, its arms side by side)" if abs_ else ""
    return ChecklistItem(name, PASS, f"{len(segments)} segments, each one option from the "
                                     f"last{ab_text}")


def latency(data: SessionData, segments: Sequence[SegmentStats]) -> ChecklistItem:
    name = "p50/p95/cold start measured"
    measured = [s for s in segments if s.requests >= MIN_REQUESTS]
    if not measured:
        return ChecklistItem(name, NOT_YET, f"no segment has served {MIN_REQUESTS} requests yet")
    parts = []
    for s in measured[-2:]:
        first = next((r for r in data.records if r.config_id == s.config_id and r.ok), None)
        cold = f", cold start (its first request) {fmt_ms(first.latency_ms)}" if first else ""
        parts.append(f"{s.config_id}: p50 {fmt_ms(s.latency_ms.p50)}, p95 "
                     f"{fmt_ms(s.latency_ms.p95)}{cold}")
    return ChecklistItem(name, PASS, "; ".join(parts))


def memory(data: SessionData, ctx: DoctorContext, concurrency: int) -> ChecklistItem:
    name = "memory watched against concurrency"
    headroom = kv_headroom(data.records, ctx.device_sample)
    if headroom is None:
        return ChecklistItem(name, NOT_YET, "no memory reading with served requests yet")
    free, holds, per_request = headroom
    text = (f"{fmt_bytes(free)} free holds {holds} requests' KV cache "
            f"({fmt_bytes(per_request)} each, p95); up to {concurrency} were in the system")
    return ChecklistItem(name, PASS if holds >= concurrency else FAIL, text)


def peak(data: SessionData, segments: Sequence[SegmentStats],
         diagnoses: Sequence[SegmentDiagnosis], live: Load | None = None) -> ChecklistItem:
    """`live`: the live view's load (the throughput panel's figures), judged beside each
    segment's own; every load is printed with Load.text(), its scope labelled."""
    name = "load tested at peak"
    loads: list[tuple[float, str, Load]] = []
    for s in segments:
        records = [r for r in data.records if r.config_id == s.config_id]
        load = records_load(records, f"{s.config_id}'s arrivals")
        if load.share is not None:
            loads.append((load.share, s.config_id, load))
    if live is not None and live.share is not None:
        loads.append((live.share, "now", live))
    saturated = [d.config_id for d in diagnoses
                 if any(f.finding == "saturation" for f in d.findings)]
    if saturated or any(load >= PEAK_LOAD for load, *_ in loads):
        highest = max(loads, key=lambda item: item[0], default=None)
        if live is not None and live.share is not None and live.share >= PEAK_LOAD:
            highest = (live.share, "now", live)     # what the throughput panel shows
        text = f"{highest[1]}: {highest[2].text()}" if highest else ""
        return ChecklistItem(name, PASS, text or f"saturated in {', '.join(saturated)}")
    if not loads:
        return ChecklistItem(name, NOT_YET, "no offered rate measured yet")
    _, cid, load = max(loads, key=lambda item: item[0])
    return ChecklistItem(name, NOT_YET, (
        f"at most {cid}: {load.text()}; replay faster (--speed, or + on the dashboard)"))


def documented(ctx: DoctorContext) -> ChecklistItem:
    name = "results documented (a snapshot saved)"
    if ctx.saved:
        return ChecklistItem(name, PASS, f"saved as {ctx.saved}")
    return ChecklistItem(name, NOT_YET, "not saved yet; press s")


def checklist(data: SessionData, diagnoses: Sequence[SegmentDiagnosis], ctx: DoctorContext,
              segments: Sequence[SegmentStats] | None = None) -> tuple[ChecklistItem, ...]:
    segments = session_segments(data) if segments is None else segments
    concurrency = peak_concurrency(data.records)
    return (traffic(data, concurrency, ctx.asked), bottleneck(diagnoses), graph_breaks(data, segments),
            dynamic_shapes(data, segments, ctx), kv_cache(data, segments),
            one_change(data, segments), latency(data, segments), memory(data, ctx, concurrency),
            peak(data, segments, diagnoses, ctx.load), documented(ctx))
