"""One run of the study: a config served over a fixed request list, cold, then warm.

A run gets a fresh engine (so it starts cold, as a new deployment of that config would), serves
its requests back to back — no open-loop waiting, so a request's latency is its service time —
once as a warm-up pass (its first request is the cold start, with every compile it waits on),
then `repeats` steady passes. Everything reported is computed from the records of those passes.

A short warm-up (`RunContext.short_warmup`, the sequential study's) serves only the first
request whole, as the cold start, and rehearses the rest unrecorded with their outputs cut to
REHEARSED_TOKENS: every input shape the passes will meet is compiled and every kernel touched,
for a few percent of a pass's decode steps. It applies where a shape's compile does not depend
on how far a decode goes (`short_warmup_fits`): eager configs, and compiled configs that bucket
their inputs and decode over a static cache. The rest (no bucketing: E3's curve reads every
warm-up request; no KV cache or HF generate(): they recompile as outputs grow) keep the pass.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Sequence

from probe.common.atomic import write_json_atomic
from probe.contract.objective import Slo
from probe.contract.options import OptConfig
from probe.contract.records import RequestRecord
from probe.contract.session import SessionData
from probe.engine.process.environment import environment
from probe.runs.plan import RunSpec
from probe.runs.results import ExtraFigures, PassResult, RunResult, summarize_run
from probe.runs.stopping import CAP, FIXED, SEQUENTIAL, Paired, PairRounds, Stopping, StopRule
from probe.session_store.snapshot import snapshot_document

if TYPE_CHECKING:   # the engine's types only: the bench's plan and results load no torch
    from probe.engine.engine import Engine
    from probe.engine.model.loading import LoadedModel


@dataclass(frozen=True)
class RunHooks:
    """What the runner wants to hear about (the progress bar) and add (TORCH_TRACE)."""
    on_request: Callable[[str, int, int], None] = lambda phase, done, total: None
    after_engine: Callable[[Engine], None] = lambda engine: None


@dataclass(frozen=True)
class RunContext:
    """What every engine of the study shares."""
    model: str
    device: str
    loaded: LoadedModel | None           # shared by every run; None while shipped to a node
    max_input: int
    repeats: int
    compile_backend: str = "inductor"
    out_dir: Path | None = None          # snapshots go to out_dir/runs/KEY.json
    trace_info: dict = field(default_factory=dict)
    keep_tokens: bool = False            # every request's token ids in the run snapshots
    slo: Slo | None = None               # what each run's goodput is measured against
    slo_target: float = 0.9              # the attainment capacity at the SLO keeps
    stopping: str = SEQUENTIAL           # --stopping: SEQUENTIAL (probe/runs/stopping.py) or
                                         # FIXED (every run serves --repeats passes)
    short_warmup: bool = False           # where it fits, the warm-up serves one request whole
                                         # and rehearses the rest (the module's docstring)

    def require_model(self) -> LoadedModel:
        """The loaded model, for what reads it directly (an engine loads its own without)."""
        if self.loaded is None:
            raise RuntimeError("this run context was shipped without its model; the node that "
                               "runs it loads one (probe.runs.workers.loaded_model)")
        return self.loaded


@dataclass(frozen=True)
class Extra:
    """More measurement on a run's engine after its timed passes (the observer's alternating
    passes, a profile). `name` is the RunResult field its figures go to."""
    name: str
    measure: Callable[[Engine, RunSpec, RunContext, RunHooks], ExtraFigures]
    passes: Callable[[RunContext], int] = lambda context: 0    # more passes it is expected
                                                              # to serve: the time estimate
    processes: int = 0          # fresh processes it starts, for the time estimate
    compiles: int = 0           # graphs it compiles from nothing, for the time estimate


def make_engine(context: RunContext, options: OptConfig, *, max_new_tokens: int,
                bucket_edges: tuple[int, ...] = (), **settings) -> Engine:
    """The bench's one way to build an engine: the study's model, device and backend, with
    what a run or an experiment sets on top (`max_batch`, `kv_budget_bytes`, …)."""
    from probe.engine.engine import Engine, EngineSettings
    engine = Engine(EngineSettings(model=context.model, device=context.device,
                                   bucket_edges=bucket_edges, max_input_tokens=context.max_input,
                                   max_new_tokens=max_new_tokens,
                                   compile_backend=context.compile_backend,
                                   keep_tokens=context.keep_tokens, **settings),
                    options, loaded=context.loaded)
    engine.session.set_slo(context.slo)
    return engine


def serve_pass(engine: Engine, spec: RunSpec, pass_index: int, label: str,
               on_request: Callable[[str, int, int], None], *,
               seq_stride: int | None = None,
               stop: Callable[[Sequence[RequestRecord]], bool] | None = None) -> PassResult:
    """Every request of the spec, back to back; arrival = the moment it is handed over.
    Request i of pass p gets seq p·stride + i: unique in the session, and the same input ids
    for the same request in every config. `stop`, asked after each request with the pass's
    records so far: True ends the pass there (a stopping rule settled)."""
    from probe.engine.model.requests import EngineRequest
    records: list[RequestRecord] = []
    count = len(spec.requests)
    stride = seq_stride or count
    start = time.perf_counter()
    for i, request in enumerate(spec.requests):
        engine_request = EngineRequest(
            id=f"{request.id}@{label}", seq=pass_index * stride + i,
            input_length=request.input_length, output_length=request.output_length,
            arrival_s=engine.clock.now_s(), text=request.text)
        records.extend(engine.serve([engine_request]))
        on_request(label, i + 1, count)
        if stop is not None and i + 1 < count and stop(records):
            break
    return PassResult(tuple(records), time.perf_counter() - start)


REHEARSED_TOKENS = 2       # a rehearsal's output: the encoder and two decode steps per shape


def short_warmup_fits(spec: RunSpec) -> bool:
    """Whether rehearsing at REHEARSED_TOKENS compiles everything the passes will need."""
    options = spec.options
    if not options.compiled:
        return True
    return (options.bucketing == "on" and bool(spec.edges) and options.kv_cache == "on"
            and options.decode == "fullgraph")


def warms_short(context: RunContext, spec: RunSpec) -> bool:
    """Whether this run's warm-up is the short one: the context asks for it and it fits."""
    return context.short_warmup and short_warmup_fits(spec)


def warmup_share(spec: RunSpec, short: bool) -> float:
    """The warm-up's decode work as a share of one pass's (1: a whole pass)."""
    outputs = [r.output_length for r in spec.requests]
    if not short or not outputs:
        return 1.0
    rehearsed = sum(min(REHEARSED_TOKENS, n) for n in outputs[1:])
    return (outputs[0] + rehearsed) / max(sum(outputs), 1)


def rehearse_pass(engine: Engine, spec: RunSpec, pass_index: int, label: str,
                  on_request: Callable[[str, int, int], None], *,
                  seq_stride: int | None = None) -> PassResult:
    """The short warm-up: the first request served and recorded (the cold start), every other
    rehearsed unrecorded at REHEARSED_TOKENS (its compiles are still recorded as events)."""
    from probe.engine.model.requests import EngineRequest
    start = time.perf_counter()
    first = serve_pass(engine, replace(spec, requests=spec.requests[:1]), pass_index, label,
                       on_request, seq_stride=seq_stride or len(spec.requests))
    for i, request in enumerate(spec.requests[1:], start=1):
        engine.rehearse([EngineRequest(
            id=f"{request.id}@rehearsal", seq=-i, input_length=request.input_length,
            output_length=min(REHEARSED_TOKENS, request.output_length),
            arrival_s=engine.clock.now_s(), text=request.text)])
    on_request(label, len(spec.requests), len(spec.requests))
    return PassResult(first.records, time.perf_counter() - start)


def calibrate_ms(repeats: int = 7) -> float:
    """The best time of a fixed small eager workload (many tiny ops, like a decode step),
    taken before and after each run: how fast the machine was then. The best of several,
    because a burst of other work inflates single samples; sustained load raises them all.
    On one thread: with two, each small product also times the other thread's wake-up, and
    on a quiet 2-core VM the best of 7 came out at 3.0 ms or 4.4–9.2 ms by that luck, a
    "drift" of 3× while the runs' own passes moved under 10% (E1 on t5-small; on one
    thread: 3.0–3.8 ms, even beside a running study)."""
    import torch
    best = float("inf")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with torch.inference_mode():
            base = torch.full((64, 64), 1 / 64)
            for _ in range(repeats):
                x = base
                start = time.perf_counter()
                for _ in range(200):
                    x = torch.relu(x @ base + 0.001)
                best = min(best, time.perf_counter() - start)
    finally:
        torch.set_num_threads(threads)
    return 1000 * best


def _only(data, config_id: str):
    """The part of a session that one config served."""
    from types import MappingProxyType

    return SessionData(
        records=tuple(r for r in data.records if r.config_id == config_id),
        events=tuple(e for e in data.events if e.config_id == config_id),
        breaks=tuple(b for b in data.breaks if b.config_id == config_id),
        configs=MappingProxyType({config_id: data.configs[config_id]}),
        notices=data.notices, references=data.references, slo=data.slo)


def group_key(specs: Sequence[RunSpec]) -> str:
    return "__and__".join(spec.key for spec in specs)


def execute(spec: RunSpec, context: RunContext, hooks: RunHooks, *,
            extras: frozenset[Extra] = frozenset(), rule: StopRule | None = None) -> RunResult:
    """Run one spec; returns its result and writes its session snapshot."""
    return execute_group([spec], context, hooks, extras={spec.key: extras}, rule=rule)[spec.key]


def execute_group(specs: Sequence[RunSpec], context: RunContext, hooks: RunHooks, *,
                  extras: dict[str, frozenset[Extra]] | None = None,
                  rule: StopRule | None = None) -> dict[str, RunResult]:
    """Run specs on one engine with their passes interleaved (A B B A …), so a change in the
    machine's load hits every config of the group alike. Only eager configs can share an engine
    this way: a compiled config must start cold, and switching configs resets dynamo.
    `rule` (a single spec only): its warm passes stop once it settles (probe/runs/stopping.py);
    the `repeats` passes stay the cap. Two configs over the same requests, under --stopping
    sequential, stop together after the round their verdict settles (stopping.PairRounds)."""
    extras = extras or {}
    if rule is not None and len(specs) > 1:
        raise ValueError("a stopping rule applies to a run of its own")
    if len(specs) > 1 and any(s.options.compiled for s in specs):
        raise ValueError("only eager configs can be interleaved on one engine")
    if len({s.edges for s in specs}) > 1:
        raise ValueError("interleaved configs must share their bucket edges")
    if len(specs) > 1 and any(extras.get(s.key) for s in specs):
        raise ValueError("observer and profile passes need a run of their own")
    from probe.engine.compile_cache import inductor_cache_counts
    started = time.perf_counter()
    first = specs[0]
    cache_before = inductor_cache_counts()
    calibration = [calibrate_ms()]
    engine = make_engine(context, first.options, bucket_edges=first.edges,
                         max_new_tokens=max(s.max_new_tokens for s in specs))
    hooks.after_engine(engine)
    count = max(len(s.requests) for s in specs)
    passes = [0]
    config_ids: dict[str, str] = {}
    suffix = {s.key: (f" [{s.options.label()}]" if len(specs) > 1 else "") for s in specs}

    steady: dict[str, list[PassResult]] = {s.key: [] for s in specs}
    ended: list[str | None] = [None]      # why the rule stopped the run (stopping.SETTLED …)
    rounds = pair_rounds(specs, context)

    def stop(records: Sequence[RequestRecord]) -> bool:
        if rule is None:
            return False
        served = [r for p in steady[first.key] for r in p.records] + list(records)
        ended[0] = rule.ending(served)
        return ended[0] is not None

    def run_pass(spec: RunSpec, label: str, *, stoppable: bool = False,
                 short: bool = False) -> PassResult:
        engine.set_options(spec.options)
        config_ids[spec.key] = engine.config_id
        if short:
            result = rehearse_pass(engine, spec, passes[0], label + suffix[spec.key],
                                   hooks.on_request, seq_stride=count)
        else:
            result = serve_pass(engine, spec, passes[0], label + suffix[spec.key],
                                hooks.on_request, seq_stride=count,
                                stop=stop if stoppable else None)
        passes[0] += 1
        return result

    try:
        warmup = {s.key: run_pass(s, "warm-up", short=warms_short(context, s)) for s in specs}
        for i in range(context.repeats):
            calibration.append(calibrate_ms())   # a load change inside the run shows up too
            for spec in (specs if i % 2 == 0 else list(reversed(specs))):
                steady[spec.key].append(run_pass(spec, f"pass {i + 1}/{context.repeats}",
                                                 stoppable=rule is not None))
            if ended[0] is not None or (rule is not None and stop(())):
                break
            if rounds is not None:
                ended[0] = rounds.ending(served_records(steady))
                if ended[0] is not None:
                    break
        measured: dict[str, Any] = {  # each Extra's figures, by the RunResult field they fill
            extra.name: extra.measure(engine, first, context, hooks)
            for extra in sorted(extras.get(first.key, ()), key=lambda e: e.name)}
        calibration.append(calibrate_ms())
        engine.compute_references()     # after the timed passes: drift costs them nothing
        data = engine.session.freeze()
        snapshot = _write_snapshot(engine, data, specs, context)
        records = served_records(steady)
        results = {}
        for spec in specs:
            cid = config_ids[spec.key]
            whole = [p for p in steady[spec.key] if len(p.records) == len(spec.requests)]
            results[spec.key] = replace(
                summarize_run(spec, _only(data, cid), warmup[spec.key], whole),
                steady_records=tuple(records[spec.key]),
                stopping=_stopping(spec, context, rule, steady[spec.key], ended[0],
                                   interleaved=len(specs) > 1,
                                   rounds=None if rounds is None else rounds.against(
                                       records, spec.key)),
                weight_bytes=_weight_bytes(engine, data.configs[cid].options),
                served_options=data.configs[cid].options, calibration_ms=tuple(calibration),
                group=group_key(specs) if len(specs) > 1 else None, snapshot=snapshot,
                warmup_rehearsed=len(spec.requests) - 1 if warms_short(context, spec) else 0,
                **{name: figures for name, figures in measured.items()
                   if spec is first and figures is not None})
    finally:
        engine.close()
    wall = (time.perf_counter() - started) / len(specs)
    after = inductor_cache_counts()
    cache = {name: after[name] - cache_before.get(name, 0) for name in after}
    return {key: replace(result, run_wall_s=wall, cache=cache) for key, result in results.items()}


def pair_rounds(specs: Sequence[RunSpec], context: RunContext) -> PairRounds | None:
    """The rule of two interleaved configs over one request list, under --stopping sequential."""
    if (len(specs) != 2 or context.stopping != SEQUENTIAL
            or specs[0].requests != specs[1].requests):
        return None
    count = len(specs[0].requests)
    return PairRounds(specs[0].key, specs[1].key, count, count * context.repeats)


def served_records(steady: dict[str, list[PassResult]]) -> dict[str, list[RequestRecord]]:
    return {key: [r for p in passes for r in p.records] for key, passes in steady.items()}


def _stopping(spec: RunSpec, context: RunContext, rule: StopRule | None,
              passes: Sequence[PassResult], ended: str | None, *,
              interleaved: bool = False, rounds: tuple[Paired, ...] | None = None) -> Stopping:
    records = [r for p in passes for r in p.records]
    cap = len(spec.requests) * context.repeats
    if context.stopping == FIXED:
        return Stopping(FIXED, len(records), cap, "fixed size")
    if rounds is not None:
        return Stopping(SEQUENTIAL, len(records), cap, ended or CAP, rounds)
    if interleaved:
        return Stopping(SEQUENTIAL, len(records), cap, "interleaved")
    if rule is not None and rule.whole:
        return Stopping(SEQUENTIAL, len(records), cap, "whole passes")
    if rule is not None and rule.alone:
        return Stopping(SEQUENTIAL, len(records), cap, ended or CAP)
    if rule is None or not rule.partners:
        return Stopping(SEQUENTIAL, len(records), cap, "nothing to pair")
    return Stopping(SEQUENTIAL, len(records), cap, ended or CAP, rule.against(records))


def _write_snapshot(engine, data, specs: Sequence[RunSpec], context: RunContext) -> str | None:
    """The group's session snapshot, for `snapshot show` / `snapshot compare`."""
    if context.out_dir is None:
        return None
    first = specs[0]
    document = snapshot_document(
        data, environment=environment(engine.device),
        model=engine.loaded.info.as_dict(first.options.precision),
        trace={**context.trace_info, "requests": max(len(s.requests) for s in specs),
               "request_list": first.requests_name},
        settings={"bucket_edges": list(first.edges), "bucket_source": first.edges_name,
                  "max_new_tokens": engine.settings.max_new_tokens,
                  "compile_backend": context.compile_backend,
                  "bench_run": group_key(specs), "repeats": context.repeats,
                  "interleaved": len(specs) > 1})
    path = write_json_atomic(context.out_dir / "runs" / f"{group_key(specs)}.json", document)
    return str(path.relative_to(context.out_dir))


def _weight_bytes(engine, options: OptConfig) -> int | None:
    from probe.engine.measure.step_roofline import weight_bytes
    try:
        return weight_bytes(engine.switchboard.model_for(options))
    except Exception:  # a figure we cannot read is shown as n/a, never a crash
        return None
