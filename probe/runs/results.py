"""A run's figures as typed values, computed from its raw records and compile events, and
written to report.json under the same keys as ever (`as_dict`)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from itertools import islice
from typing import Any, Mapping, Sequence, Union

from probe.analysis.stats import COMPILING, compile_s, session_segments, summarize, tokens_per_s
from probe.contract.figures import (
    NO_GOODPUT,
    CompilePhases,
    DriftStats,
    EnergyStats,
    Goodput,
)
from probe.contract.objective import Slo
from probe.contract.options import OptConfig
from probe.contract.records import CompileEvent, RequestRecord
from probe.runs.cold_start import ColdStartFigures
from probe.runs.spread import NO_SPREAD, Spread
from probe.runs.stopping import Stopping


@dataclass(frozen=True)
class PassFigures:
    """One pass over the run's requests."""
    latency_p50_ms: float | None
    latency_p95_ms: float | None
    ttft_p50_ms: float | None
    tpot_ms: float | None
    tokens_per_s: float | None
    compile_stall_ms: float
    failed: int
    wall_s: float

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class PassResult:
    records: tuple[RequestRecord, ...]
    wall_s: float

    def figures(self) -> PassFigures:
        ok = [r for r in self.records if r.ok]
        latency = summarize(r.latency_ms for r in ok)
        return PassFigures(
            latency_p50_ms=latency.p50, latency_p95_ms=latency.p95,
            ttft_p50_ms=summarize(r.ttft_ms for r in ok).p50,
            tpot_ms=summarize(r.tpot_ms for r in ok).p50,
            tokens_per_s=tokens_per_s(self.records) if ok else None,
            compile_stall_ms=sum(r.compile_stall_ms for r in self.records),
            failed=len(self.records) - len(ok), wall_s=self.wall_s)


@dataclass(frozen=True)
class Steady:
    """The warm passes' figures: each the median and range of its per-pass values."""
    latency_p50_ms: Spread
    latency_p95_ms: Spread
    ttft_p50_ms: Spread
    tpot_ms: Spread
    tokens_per_s: Spread

    @classmethod
    def of(cls, passes: Sequence[PassFigures]) -> Steady:
        return cls(**{f.name: Spread.of(getattr(p, f.name) for p in passes)
                      for f in fields(cls)})

    def as_dict(self) -> dict:
        return {f.name: getattr(self, f.name).as_dict() for f in fields(self)}


STEADY_FIGURES = tuple(f.name for f in fields(Steady))


@dataclass(frozen=True)
class CurvePoint:
    """After one warm-up request: distinct input shapes seen so far vs compiles so far."""
    request: str
    input_tokens: int
    padded_tokens: int
    distinct_shapes: int
    compiles: int
    recompiles: int
    compile_s: float


@dataclass(frozen=True)
class BreakReason:
    reason: str
    location: str
    count: int


@dataclass(frozen=True)
class ObserverFigures:
    """Warm throughput with the compile probe installed vs uninstalled."""
    probes_on_tokens_per_s: Spread
    probes_off_tokens_per_s: Spread
    overhead_fraction: float | None
    verdict: str
    comparison: str
    order: tuple[str, ...]
    bookkeeping_us_per_request: float
    bookkeeping_fraction: float | None
    cap_passes: int = 0         # the most passes it would serve; fewer: its verdict settled

    def as_dict(self) -> dict:
        return {**asdict(self), "order": list(self.order)}   # asdict: each Spread a dict too


@dataclass(frozen=True)
class ProfileFiles:
    chrome_trace: str
    top_ops: str
    requests: int

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class RunResult:
    """One config served over one request list (cold, then warm)."""
    key: str
    label: str
    options: OptConfig
    requests: int
    request_list: str
    bucket_edges: tuple[int, ...]
    bucket_set: str
    cold_start_ms: float | None
    cold_start_compile_stall_ms: float | None
    warmup: PassFigures
    warmup_compile_s: float
    steady: Steady
    steady_passes: tuple[PassFigures, ...]
    steady_compiles: int
    compiles: int
    recompiles: int
    compile_s: float
    graphs: int
    graphs_per_function: Mapping[str, int]
    max_graphs_per_function: int
    graph_breaks: int
    graph_break_sites: int
    break_reasons: tuple[BreakReason, ...]
    recompile_limit_hits: int
    compile_fallbacks: int
    kv_cache_peak_bytes: int
    padding_waste: float | None
    drift: DriftStats | None
    distinct_input_lengths: int
    distinct_padded_lengths: int
    curve: tuple[CurvePoint, ...]
    failed: int
    errors: tuple[str, ...]
    recompile_reasons: tuple[str, ...]
    notes: tuple[str, ...]
    # what the engine run adds (runs.execute_group)
    weight_bytes: int | None = None
    served_options: OptConfig | None = None
    calibration_ms: tuple[float, ...] = ()
    group: str | None = None
    snapshot: str | None = None
    observer: ObserverFigures | None = None
    cold_start: ColdStartFigures | None = None     # E1's pair of fresh processes
    profile: ProfileFiles | None = None
    run_wall_s: float | None = None
    compile_phases: CompilePhases | None = None     # compile_s as dynamo split it
    # under --slo: the run's session figures over every request it served (its segment's,
    # probe/analysis/slo.py), with the throughput over the same span beside them
    slo: Slo | None = None
    goodput: Goodput = NO_GOODPUT
    throughput_rps: float | None = None
    # the run's session segment's energy (probe/analysis/energy.py): J/token over every request
    # it served, warm-up included, or why no counter was read
    energy: EnergyStats | None = None
    # how its warm passes ended: requests served of the cap, and why (probe/runs/stopping.py)
    stopping: Stopping | None = None
    # what inductor's on-disk caches served it: {"fxgraph_cache_hit": n, …} (counted here)
    cache: Mapping[str, int] | None = None
    # a short warm-up's requests rehearsed unrecorded (probe/runs/runs.py); 0: a whole pass
    warmup_rehearsed: int = 0
    # the warm passes' records (a pass a stopping rule ended early included), for the figures
    # that need them (E1's break-even, the paired verdict); not serialised
    steady_records: tuple[RequestRecord, ...] = field(default=(), repr=False, compare=False)

    def spread(self, name: str) -> Spread:
        return getattr(self.steady, name)

    def as_dict(self) -> dict:
        out = {
            "key": self.key, "label": self.label, "options": self.options.as_dict(),
            "requests": self.requests, "request_list": self.request_list,
            "bucket_edges": list(self.bucket_edges), "bucket_set": self.bucket_set,
            "cold_start_ms": self.cold_start_ms,
            "cold_start_compile_stall_ms": self.cold_start_compile_stall_ms,
            "warmup": {**self.warmup.as_dict(), "compile_s": self.warmup_compile_s,
                       "rehearsed": self.warmup_rehearsed},
            "steady": self.steady.as_dict(),
            "steady_passes": [p.as_dict() for p in self.steady_passes],
            "graphs_per_function": dict(self.graphs_per_function),
            "break_reasons": [asdict(b) for b in self.break_reasons],
            "drift": None if self.drift is None else self.drift.as_dict(),
            "curve": [asdict(p) for p in self.curve],
            "errors": list(self.errors), "recompile_reasons": list(self.recompile_reasons),
            "notes": list(self.notes), "calibration_ms": list(self.calibration_ms),
            "served_options": None if self.served_options is None
            else self.served_options.as_dict(),
        }
        for name in ("steady_compiles", "compiles", "recompiles", "compile_s", "graphs",
                     "max_graphs_per_function", "graph_breaks", "graph_break_sites",
                     "recompile_limit_hits", "compile_fallbacks", "kv_cache_peak_bytes",
                     "padding_waste", "distinct_input_lengths", "distinct_padded_lengths",
                     "failed", "weight_bytes", "group", "run_wall_s"):
            out[name] = getattr(self, name)
        out["compile_phases"] = (None if self.compile_phases is None
                                 else asdict(self.compile_phases))
        out["slo"] = None if self.slo is None else self.slo.as_dict()
        out["throughput_rps"] = self.throughput_rps
        out.update(self.goodput.as_dict())
        out["energy"] = None if self.energy is None else self.energy.as_dict()
        out["cache"] = None if self.cache is None else dict(self.cache)
        for name in ("snapshot", "observer", "profile", "cold_start", "stopping"):
            value = getattr(self, name)
            if value is not None:
                out[name] = value if isinstance(value, str) else value.as_dict()
        return out


# What a run's Extra measures beyond its passes (runs.Extra): each fills the RunResult field
# its Extra is named for; None: nothing measured (a profile without an output folder).
ExtraFigures = Union[ObserverFigures, ColdStartFigures, ProfileFiles, None]


@dataclass(frozen=True)
class FailedRun:
    """A run that raised: the study goes on, and its cells say why."""
    key: str
    label: str
    error: str
    traceback: str

    def as_dict(self) -> dict:
        return asdict(self)


RunOutcome = Union[RunResult, FailedRun]        # a run that was made: served, or raised
Outcome = Union[RunResult, FailedRun, None]     # None: not run (interrupted, not planned)

# The figures a section keeps per config (every number of the run is under `runs`).
SECTION_KEYS = ("key", "label", "options", "requests", "bucket_set", "bucket_edges", "compile_s",
                "compile_phases",
                "compiles", "recompiles", "graphs", "graphs_per_function",
                "max_graphs_per_function", "graph_breaks", "graph_break_sites", "cold_start_ms",
                "cold_start_compile_stall_ms", "steady_compiles", "recompile_limit_hits",
                "compile_fallbacks", "kv_cache_peak_bytes", "weight_bytes", "padding_waste",
                "drift", "distinct_input_lengths", "distinct_padded_lengths", "failed", "errors",
                "notes", "snapshot", "slo", "throughput_rps", "goodput_rps",
                "goodput_tokens_per_s", "slo_attainment", "energy")


def section_figures(outcome: Outcome) -> dict:
    """A config's entry in its section of report.json."""
    if outcome is None:
        return {"error": "not run"}
    if isinstance(outcome, FailedRun):
        return {"error": outcome.error}
    full = outcome.as_dict()
    out = {k: full[k] for k in SECTION_KEYS if k in full}
    out.update({name: full["steady"][name] for name in STEADY_FIGURES})
    out["padding_waste_pct"] = (None if outcome.padding_waste is None
                                else 100 * outcome.padding_waste)
    return out


def steady_spread(outcome: Outcome, name: str) -> Spread:
    return outcome.spread(name) if isinstance(outcome, RunResult) else NO_SPREAD


# RunResult fields read from the run's session segment, and their value without one
FROM_SEGMENT: dict[str, Any] = {
    "compiles": 0, "recompiles": 0, "compile_s": 0.0, "compile_phases": None, "graphs": 0,
    "graph_breaks": 0, "graph_break_sites": 0, "kv_cache_peak_bytes": 0, "padding_waste": None,
    "drift": None, "throughput_rps": None, "energy": None}


def summarize_run(spec, data, warmup: PassResult, steady: Sequence[PassResult]) -> RunResult:
    """The run's figures from its raw records and compile events (one config per run)."""
    segment = session_segments(data)[0] if data.configs else None
    steady_ids = {r.id for p in steady for r in p.records}
    events = [e for e in data.events if e.kind in COMPILING]
    per_function: dict[str, int] = {}
    for event in events:
        per_function[event.function] = per_function.get(event.function, 0) + max(event.graphs, 1)
    steady_figures = tuple(p.figures() for p in steady)
    first = warmup.records[0] if warmup.records else None
    served = [r for p in [warmup, *steady] for r in p.records]     # a short warm-up has one
    errors = [r.error for r in served if r.error]
    bucketed = spec.options.bucketing == "on"
    return RunResult(
        key=spec.key, label=spec.options.label(), options=spec.options,
        requests=len(spec.requests), request_list=spec.requests_name,
        bucket_edges=tuple(spec.edges) if bucketed else (),
        bucket_set=spec.edges_name if bucketed else "none",
        cold_start_ms=first.latency_ms if first else None,
        cold_start_compile_stall_ms=first.compile_stall_ms if first else None,
        warmup=warmup.figures(), warmup_compile_s=compile_s(events),
        steady=Steady.of(steady_figures), steady_passes=steady_figures,
        steady_compiles=sum(1 for e in events if e.request_id in steady_ids),
        graphs_per_function=per_function,
        max_graphs_per_function=max(per_function.values(), default=0),
        break_reasons=tuple(BreakReason(b.reason, b.location, b.count) for b in data.breaks),
        recompile_limit_hits=sum(1 for e in data.events if e.kind == "limit"),
        compile_fallbacks=sum(1 for e in data.events if e.kind == "fallback"),
        distinct_input_lengths=len({r.input_tokens for r in served}),
        distinct_padded_lengths=len({r.padded_tokens for r in served}),
        curve=compile_curve(warmup.records, data.events),
        failed=len(errors), errors=tuple(sorted(set(errors))[:5]),
        recompile_reasons=_distinct([e.reason for e in events if e.kind == "recompile"], 3),
        notes=tuple(n.text for n in data.notices),
        slo=data.slo,
        goodput=(Goodput(segment.goodput_rps, segment.goodput_tokens_per_s,
                         segment.slo_attainment) if segment else NO_GOODPUT),
        steady_records=tuple(r for p in steady for r in p.records),
        **{name: getattr(segment, name) if segment else default
           for name, default in FROM_SEGMENT.items()})


def _distinct(values: Sequence[str | None], limit: int) -> tuple[str, ...]:
    return tuple(islice(dict.fromkeys(value[:200] for value in values if value), limit))


def compile_curve(records: Sequence[RequestRecord],
                  events: Sequence[CompileEvent]) -> tuple[CurvePoint, ...]:
    """After each warm-up request: distinct input shapes seen so far vs compiles so far."""
    shapes: set[int] = set()
    compiles = recompiles = 0
    seconds = 0.0
    curve = []
    for record in records:
        shapes.add(record.padded_tokens)
        mine = [e for e in events if e.request_id == record.id and e.kind in COMPILING]
        compiles += len(mine)
        recompiles += sum(1 for e in mine if e.kind == "recompile")
        seconds += compile_s(mine)
        curve.append(CurvePoint(record.id.split("@")[0], record.input_tokens,
                                record.padded_tokens, len(shapes), compiles, recompiles,
                                seconds))
    return tuple(curve)
