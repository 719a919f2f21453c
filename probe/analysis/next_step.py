"""The doctor's next step: the one option change the segment's data supports, with its effect
predicted from the same session, never one the session's own segments already show to be worse.

Rules, by the tail's largest cause (the first candidate that applies and is not known worse):
  compile    new shapes recompiling without buckets → bucketing=on (the planner's K shapes
             against the distinct lengths seen); buckets or one shape, compiles at serving time
             → prewarm=on (the stall moves before serving); recompiles despite buckets →
             dynamic=on; compiles failing into eager → compile=off
  queue      batching=off → continuous, dynamic → continuous (the capacity it buys is bounded
             by max_batch × today's); continuous on the static layout → kv_layout=paged; eager
             → compile=default
  padding    bucketing=off (the pad positions go; compiled, the lengths compile instead)
  batch_wait dynamic → continuous (no window, rows leave when done)
  encode, decode (only when the tail is not healthy) eager → compile=default (with the
             break-even when the session has both); compiled and overhead-bound → guards=lean,
             then wrapper=cpp (the lean step)
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Callable, Mapping, Sequence

from probe.analysis.attribution import Attribution, RequestSplit
from probe.analysis.guard_groups import (
    bucketing_saving,
    buckets_reached,
    fix_saving,
    guard_groups,
    saving_text,
)
from probe.analysis.stats import summarize
from probe.analysis.timeline import FIRST_COMPILE, LIMIT, RECOMPILE
from probe.common.units import fmt_ms, fmt_rate, fmt_s
from probe.contract.figures import SegmentStats
from probe.contract.options import OptConfig
from probe.contract.records import BreakEven, CompileEvent, RequestRecord

OVERHEAD_BOUND = 0.5        # per-step overhead over decode time: the step is overhead-bound
HELD_TOLERANCE = 1.25       # a measured p95 within this of the predicted one: the prediction held


@dataclass(frozen=True)
class NextStep:
    options: Mapping[str, str]
    why: str
    predicted: str
    predicted_p95_ms: float | None = None       # what the next segment is checked against
    predicted_capacity_rps: float | None = None

    def as_dict(self) -> dict:
        return {"options": dict(self.options), "why": self.why, "predicted": self.predicted}


@dataclass(frozen=True)
class SegmentFacts:
    """What the rules read about one segment."""
    options: OptConfig
    stats: SegmentStats
    attribution: Attribution
    served: Sequence[RequestSplit]          # every served request's split, not only the tail
    records: Sequence[RequestRecord]
    events: Sequence[CompileEvent]          # the segment's own compile events
    offered_rps: float | None
    capacity_rps: float | None
    bucket_edges: tuple[int, ...] = ()      # the planner's (or --buckets) edges
    max_batch: int = 1
    others: Mapping[OptConfig, SegmentStats] = field(default_factory=dict)  # the session's
    break_even: BreakEven | None = None


def p95_without(facts: SegmentFacts, ms_of: Callable[[RequestSplit], float]) -> float | None:
    """The segment's p95 had each served request been spared `ms_of` its split."""
    return summarize(s.latency_ms - ms_of(s) for s in facts.served).p95


def known_worse(facts: SegmentFacts, options: OptConfig) -> bool:
    """The session already served `options` and its p95 or its throughput was worse."""
    other = facts.others.get(options)
    mine = facts.stats
    if other is None or other.config_id == mine.config_id:
        return False
    worse_p95 = (other.latency_ms.p95 is not None and mine.latency_ms.p95 is not None
                 and other.latency_ms.p95 > mine.latency_ms.p95)
    worse_rate = (other.throughput_rps is not None and mine.throughput_rps is not None
                  and other.throughput_rps < mine.throughput_rps)
    return worse_p95 or worse_rate


def _compile_ms(split: RequestSplit, *kinds: str) -> float:
    return sum(split.compile_ms.get(k, 0.0) for k in kinds)


def _compile_steps(f: SegmentFacts) -> list[NextStep]:
    o, steps = f.options, []
    timed = [e for e in f.events if e.kind in ("compile", "recompile")]
    recompiles = [e for e in timed if e.kind == "recompile"]
    limits = sum(e.kind == "limit" for e in f.events)
    lengths = len({r.padded_tokens for r in f.records if r.ok})
    mean_recompile_s = (sum(e.duration_s or 0 for e in recompiles) / len(recompiles)
                        if recompiles else 0.0)
    shape_ms = f.attribution.cause("compile").ms
    if o.compiled and o.bucketing == "off" and (recompiles or limits) and f.bucket_edges \
            and lengths > len(f.bucket_edges):
        k = len(f.bucket_edges)
        # the guard groups' own saving (the `r` screen and the doctor's groups print it), or,
        # where the recompiles name no size guard, the same formula over every recompile
        saving = fix_saving(guard_groups(f.events, f.records, f.bucket_edges), {"bucketing": "on"})
        if saving is None:
            saving = bucketing_saving(
                len(recompiles), len({e.function for e in recompiles}) or 1,
                buckets_reached((r.input_tokens for r in f.records if r.ok), f.bucket_edges),
                mean_recompile_s)
        p95 = p95_without(f, lambda s: _compile_ms(s, RECOMPILE, LIMIT))
        steps.append(NextStep(
            {"bucketing": "on"},
            f"{lengths} distinct input lengths compiled their own shapes ({len(recompiles)} "
            f"recompiles{f', {limits} limit hits' if limits else ''}); the planner's {k} "
            f"buckets ({', '.join(map(str, f.bucket_edges))}) cover them",
            f"at most {k} shapes instead of {lengths}: {saving_text(*saving)}; p95 ≈ "
            f"{fmt_ms(p95)} without the recompile stalls", predicted_p95_ms=p95))
    at_serving = [e for e in timed if not e.beside]     # a warm switch's ran beside: no wait
    if o.compiled and o.prewarm == "off" and (at_serving or not timed) and (
            o.bucketing == "on" or lengths <= 1):
        timed = at_serving
        stall_s = sum(e.duration_s or 0 for e in timed)
        p95 = p95_without(f, lambda s: _compile_ms(s, FIRST_COMPILE, RECOMPILE))
        steps.append(NextStep(
            {"prewarm": "on"},
            f"requests waited on {len(timed)} compiles at serving time "
            f"({fmt_s(stall_s)}; {fmt_ms(shape_ms)} of it in the tail)",
            f"the stall moves before the first request: p95 ≈ {fmt_ms(p95)}",
            predicted_p95_ms=p95))
    if o.compiled and o.dynamic == "off" and len(recompiles) > max(len(f.bucket_edges), 1):
        p95 = p95_without(f, lambda s: _compile_ms(s, RECOMPILE, LIMIT))
        steps.append(NextStep(
            {"dynamic": "on"},
            f"{len(recompiles)} recompiles for new shapes (static shapes: each length its own)",
            f"one or two dynamic-shape compiles instead: p95 ≈ {fmt_ms(p95)}",
            predicted_p95_ms=p95))
    if o.compiled and any(e.kind == "fallback" for e in f.events):
        steps.append(NextStep(
            {"compile": "off"},
            "the compile failed and the config serves eager anyway",
            "the failed compile attempts' stall goes; the step stays as fast as it is now",
            predicted_p95_ms=p95_without(f, lambda s: s.ms["compile"])))
    return steps


def _queue_steps(f: SegmentFacts) -> list[NextStep]:
    o, steps = f.options, []
    p95 = p95_without(f, lambda s: s.ms["queue"])
    capacity = f.capacity_rps
    bound = capacity * f.max_batch if capacity else None
    offered = f" against {fmt_rate(f.offered_rps, 'req/s')} offered" if f.offered_rps else ""
    if o.batching in ("off", "dynamic"):
        steps.append(NextStep(
            {"batching": "continuous"},
            f"the tail waited in the queue: the engine serves {fmt_rate(capacity, 'req/s')}"
            f"{offered}",
            f"capacity up to {fmt_rate(bound, 'req/s')} ({f.max_batch} slots share each "
            f"step); once it is above the offered load p95 ≈ {fmt_ms(p95)}",
            predicted_p95_ms=p95, predicted_capacity_rps=bound))
    if o.batching == "continuous" and o.kv_layout == "static":
        steps.append(NextStep(
            {"kv_layout": "paged"},
            "continuous slots are full: the static layout sizes them for the worst case",
            f"more slots in the same KV memory: p95 toward {fmt_ms(p95)}",
            predicted_p95_ms=p95))
    if not o.compiled:
        steps.append(_compile_step(f, "the queue grows behind eager steps"))
    return steps


def _compile_step(f: SegmentFacts, why: str) -> NextStep:
    be = f.break_even
    if be is not None and be.requests is not None:
        repaid = ("never repays (not faster)" if be.requests == float("inf")
                  else f"repays its {fmt_s(be.compile_s)} compile after {be.requests:.0f} "
                       f"requests")
        predicted = f"{fmt_ms(be.saved_ms_per_request)} saved a request (this session's " \
                    f"{be.compiled_config}); {repaid}"
    else:
        predicted = ("a faster step for a one-off compile; the break-even (compile seconds ÷ "
                     "the time saved a request) is measured by the next segment")
    return NextStep({"compile": "default"}, why, predicted)


def _padding_steps(f: SegmentFacts) -> list[NextStep]:
    if f.options.bucketing != "on":
        return []
    cost = "" if not f.options.compiled else "; each distinct length then compiles its shape"
    p95 = p95_without(f, lambda s: s.ms["padding"])
    return [NextStep({"bucketing": "off"},
                     f"{100 * f.attribution.cause('padding').share:.0f}% of the tail ran on pad "
                     f"positions of the bucket edges", f"p95 ≈ {fmt_ms(p95)} without them{cost}",
                     predicted_p95_ms=p95)]


def _batch_steps(f: SegmentFacts) -> list[NextStep]:
    if f.options.batching != "dynamic":
        return []
    p95 = p95_without(f, lambda s: s.ms["batch_wait"])
    return [NextStep({"batching": "continuous"},
                     "the tail waited for batches to fill and for their longest rows",
                     f"requests join and leave at every step: p95 ≈ {fmt_ms(p95)}",
                     predicted_p95_ms=p95)]


def _work_steps(f: SegmentFacts) -> list[NextStep]:
    o = f.options
    if not o.compiled:
        return [_compile_step(f, "eager steps dominate the tail")]
    decode = f.attribution.cause("decode")
    weights = sum(s.decode_weights_ms for s in f.attribution.splits)
    steps = []
    if decode.ms and weights and (decode.ms - weights) / decode.ms >= OVERHEAD_BOUND:
        overhead = f"{100 * (decode.ms - weights) / decode.ms:.0f}% of decode is per-step overhead"
        if o.guards == "full":
            steps.append(NextStep({"guards": "lean"}, overhead,
                                  "fewer guard checks before each compiled step"))
        if o.wrapper == "python":
            steps.append(NextStep({"wrapper": "cpp"}, overhead,
                                  "kernels launched from C++: less Python per step"))
    return steps


RULES: dict[str, Callable[[SegmentFacts], list[NextStep]]] = {
    "compile": _compile_steps, "queue": _queue_steps, "padding": _padding_steps,
    "batch_wait": _batch_steps, "encode": _work_steps, "decode": _work_steps,
}


def next_step(facts: SegmentFacts, cause: str | None, *, healthy: bool) -> NextStep | None:
    """The first candidate for `cause` that changes something and is not known worse."""
    if healthy or cause is None:
        return None
    for step in RULES.get(cause, lambda f: [])(facts):
        candidate = replace(facts.options, **step.options)
        if candidate != facts.options and not known_worse(facts, candidate):
            return step
    return None


def prediction_held(step: NextStep, after: SegmentStats) -> tuple[bool, str] | None:
    """Whether the segment served after taking `step` met its prediction (None: nothing
    numeric was predicted, or nothing served)."""
    if step.predicted_p95_ms is not None and after.latency_ms.p95 is not None:
        held = after.latency_ms.p95 <= step.predicted_p95_ms * HELD_TOLERANCE
        return held, (f"predicted p95 ≈ {fmt_ms(step.predicted_p95_ms)}, measured "
                      f"{fmt_ms(after.latency_ms.p95)}")
    if step.predicted_capacity_rps is not None and after.throughput_rps is not None:
        held = after.throughput_rps * HELD_TOLERANCE >= step.predicted_capacity_rps
        return held, (f"predicted up to {fmt_rate(step.predicted_capacity_rps, 'req/s')}, "
                      f"served {fmt_rate(after.throughput_rps, 'req/s')}")
    return None
