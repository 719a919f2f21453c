"""One run of the study: a config served over a fixed request list, cold, then warm.

A run gets a fresh engine (so it starts cold, as a new deployment of that config would), serves
its requests back to back — no open-loop waiting, so a request's latency is its service time —
once as a warm-up pass (its first request is the cold start, with every compile it waits on),
then `repeats` steady passes. Everything reported is computed from the records of those passes.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable, Sequence

from probe.options import OptConfig
from probe.records import RequestRecord
from probe.stats import summarize, tokens_per_s

EXTRA_OBSERVER = "observer"
EXTRA_PROFILE = "profile"


@dataclass(frozen=True)
class BenchRequest:
    id: str
    input_length: int
    output_length: int
    text: str | None = None


@dataclass(frozen=True)
class RunSpec:
    """What one run serves. Two experiments asking for an equal spec share one run."""
    options: OptConfig
    requests: tuple[BenchRequest, ...]
    requests_name: str                  # "replayed requests", "E5 long outputs", ...
    edges: tuple[int, ...] = ()         # bucket edges (used when options.bucketing == "on")
    edges_name: str = "none"            # "planner (K=4)", "powers of two", "none"

    @property
    def max_new_tokens(self) -> int:
        return max((r.output_length for r in self.requests), default=1)

    @property
    def key(self) -> str:
        """A file-name-safe, readable id: the options that differ from the defaults, the
        bucket set and the request list."""
        parts = [self.options.label().replace(" ", "_")]
        if self.options.bucketing == "on":
            parts.append(self.edges_name)
        parts.append(self.requests_name)
        return "__".join(_slug(p) for p in parts)


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.=+-]+", "-", text.replace("=", "")
                  if "(" in text else text).strip("-")


@dataclass
class PassResult:
    records: list[RequestRecord]
    wall_s: float

    def figures(self) -> dict:
        ok = [r for r in self.records if r.ok]
        latency = summarize(r.latency_ms for r in ok)
        tpot = summarize(r.tpot_ms for r in ok)
        ttft = summarize(r.ttft_ms for r in ok)
        return {
            "latency_p50_ms": latency.p50, "latency_p95_ms": latency.p95,
            "ttft_p50_ms": ttft.p50, "tpot_ms": tpot.p50,
            "tokens_per_s": tokens_per_s(self.records) if ok else None,
            "compile_stall_ms": sum(r.compile_stall_ms for r in self.records),
            "failed": len(self.records) - len(ok), "wall_s": self.wall_s,
        }


@dataclass
class RunHooks:
    """What the runner wants to hear about (the progress bar) and add (TORCH_TRACE)."""
    on_request: Callable[[str, int, int], None] = lambda phase, done, total: None
    after_engine: Callable[[object], None] = lambda engine: None


@dataclass
class RunContext:
    model: str
    device: str
    loaded: object                       # probe.models.LoadedModel, shared by every run
    max_input: int
    repeats: int
    compile_backend: str = "inductor"
    out_dir: Path | None = None          # snapshots go to out_dir/runs/KEY.json
    trace_info: dict = field(default_factory=dict)
    keep_tokens: bool = False            # every request's token ids in the run snapshots


class _NullProbe:
    """Stands in for the CompileProbe while the observer cost is measured with probes off:
    no dynamo callbacks, no log handlers and none of the engine's per-request bookkeeping."""

    def __init__(self, breaks) -> None:
        self._breaks = list(breaks)
        self.compile_seconds = 0.0

    def set_context(self, request_id, config_id) -> None:
        pass

    def collect(self) -> list:
        return []

    def graph_breaks(self) -> list:
        return self._breaks


def serve_pass(engine, spec: RunSpec, pass_index: int, label: str,
               on_request: Callable[[str, int, int], None], *,
               seq_stride: int | None = None) -> PassResult:
    """Every request of the spec, back to back; arrival = the moment it is handed over.
    Request i of pass p gets seq p·stride + i: unique in the session, and the same input ids
    for the same request in every config."""
    from probe.requests import EngineRequest
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
    return PassResult(records, time.perf_counter() - start)


def calibrate_ms(repeats: int = 7) -> float:
    """The best time of a fixed small eager workload (many tiny ops, like a decode step),
    taken before and after each run: how fast the machine was then. The best of several,
    because a burst of other work inflates single samples; sustained load raises them all."""
    import torch
    best = float("inf")
    with torch.inference_mode():
        base = torch.full((64, 64), 1 / 64)
        for _ in range(repeats):
            x = base
            start = time.perf_counter()
            for _ in range(200):
                x = torch.relu(x @ base + 0.001)
            best = min(best, time.perf_counter() - start)
    return 1000 * best


def _only(data, config_id: str):
    """The part of a session that one config served."""
    from types import MappingProxyType
    from probe.session import SessionData
    return SessionData(
        records=tuple(r for r in data.records if r.config_id == config_id),
        events=tuple(e for e in data.events if e.config_id == config_id),
        breaks=tuple(b for b in data.breaks if b.config_id == config_id),
        configs=MappingProxyType({config_id: data.configs[config_id]}),
        notices=data.notices, references=data.references)


def group_key(specs: Sequence[RunSpec]) -> str:
    return "__and__".join(spec.key for spec in specs)


def execute(spec: RunSpec, context: RunContext, hooks: RunHooks, *,
            extras: frozenset[str] = frozenset()) -> dict:
    """Run one spec; returns its result (JSON-ready) and writes its session snapshot."""
    return execute_group([spec], context, hooks, extras={spec.key: extras})[spec.key]


def execute_group(specs: Sequence[RunSpec], context: RunContext, hooks: RunHooks, *,
                  extras: dict[str, frozenset[str]] | None = None) -> dict[str, dict]:
    """Run specs on one engine with their passes interleaved (A B B A …), so a change in the
    machine's load hits every config of the group alike. Only eager configs can share an engine
    this way: a compiled config must start cold, and switching configs resets dynamo."""
    from probe.engine import Engine, EngineSettings
    from probe.snapshot import environment, session_document, write_json_atomic

    extras = extras or {}
    if len(specs) > 1 and any(s.options.compiled for s in specs):
        raise ValueError("only eager configs can be interleaved on one engine")
    if len({s.edges for s in specs}) > 1:
        raise ValueError("interleaved configs must share their bucket edges")
    if len(specs) > 1 and any(extras.get(s.key) for s in specs):
        raise ValueError("observer and profile passes need a run of their own")
    started = time.perf_counter()
    first = specs[0]
    settings = EngineSettings(model=context.model, device=context.device,
                              bucket_edges=first.edges, max_input_tokens=context.max_input,
                              max_new_tokens=max(s.max_new_tokens for s in specs),
                              compile_backend=context.compile_backend,
                              keep_tokens=context.keep_tokens)
    calibration = [calibrate_ms()]
    engine = Engine(settings, first.options, loaded=context.loaded)
    hooks.after_engine(engine)
    count = max(len(s.requests) for s in specs)
    passes = [0]
    config_ids: dict[str, str] = {}
    suffix = {s.key: (f" [{s.options.label()}]" if len(specs) > 1 else "") for s in specs}

    def run_pass(spec: RunSpec, label: str) -> PassResult:
        engine.set_options(spec.options)
        config_ids[spec.key] = engine.config_id
        result = serve_pass(engine, spec, passes[0], label + suffix[spec.key], hooks.on_request,
                            seq_stride=count)
        passes[0] += 1
        return result

    results: dict[str, dict] = {}
    try:
        warmup = {s.key: run_pass(s, "warm-up") for s in specs}
        steady: dict[str, list[PassResult]] = {s.key: [] for s in specs}
        for i in range(context.repeats):
            calibration.append(calibrate_ms())   # a load change inside the run shows up too
            for spec in (specs if i % 2 == 0 else list(reversed(specs))):
                steady[spec.key].append(run_pass(spec, f"pass {i + 1}/{context.repeats}"))
        observer = profile = None
        if EXTRA_OBSERVER in extras.get(first.key, ()):
            observer = measure_observer(engine, first, context.repeats, hooks)
        if EXTRA_PROFILE in extras.get(first.key, ()) and context.out_dir:
            profile = profile_requests(engine, first, context.out_dir, hooks)
        calibration.append(calibrate_ms())
        engine.compute_references()     # after the timed passes: drift costs them nothing
        data = engine.session.freeze()
        snapshot = None
        if context.out_dir is not None:
            document = session_document(
                data, environment=environment(engine.device),
                model=engine.loaded.info.as_dict(first.options.precision),
                trace={**context.trace_info, "requests": count,
                       "request_list": first.requests_name},
                settings={"bucket_edges": list(first.edges), "bucket_source": first.edges_name,
                          "max_new_tokens": settings.max_new_tokens,
                          "compile_backend": context.compile_backend,
                          "bench_run": group_key(specs), "repeats": context.repeats,
                          "interleaved": len(specs) > 1})
            path = write_json_atomic(context.out_dir / "runs" / f"{group_key(specs)}.json",
                                     document)
            snapshot = str(path.relative_to(context.out_dir))
        for spec in specs:
            cid = config_ids[spec.key]
            result = summarize_run(spec, _only(data, cid), warmup[spec.key], steady[spec.key])
            result["weight_bytes"] = _weight_bytes(engine, data.configs[cid].options)
            result["served_options"] = data.configs[cid].options.as_dict()
            result["calibration_ms"] = list(calibration)
            result["group"] = group_key(specs) if len(specs) > 1 else None
            if snapshot:
                result["snapshot"] = snapshot
            if spec is first and observer:
                result["observer"] = observer
            if spec is first and profile:
                result["profile"] = profile
            results[spec.key] = result
    finally:
        engine.close()
    wall = time.perf_counter() - started
    for result in results.values():
        result["run_wall_s"] = wall / len(specs)
    return results


def _weight_bytes(engine, options: OptConfig) -> int | None:
    from probe.roofline import weight_bytes
    try:
        return weight_bytes(engine.switchboard.model_for(options))
    except Exception:  # a figure we cannot read is shown as n/a, never a crash
        return None


def summarize_run(spec: RunSpec, data, warmup: PassResult, steady: Sequence[PassResult]) -> dict:
    """The run's figures from its raw records and compile events (one config per run)."""
    from probe.bench.stats import Spread

    segment = data.segments()[0] if data.configs else None
    steady_ids = {r.id for p in steady for r in p.records}
    events = [e for e in data.events if e.kind in ("compile", "recompile")]
    per_function: dict[str, int] = {}
    for event in events:
        per_function[event.function] = per_function.get(event.function, 0) + max(event.graphs, 1)
    steady_figures = [p.figures() for p in steady]
    first = warmup.records[0] if warmup.records else None
    errors = [r.error for p in [warmup, *steady] for r in p.records if r.error]
    return {
        "key": spec.key,
        "label": spec.options.label(),
        "options": spec.options.as_dict(),
        "requests": len(spec.requests),
        "request_list": spec.requests_name,
        "bucket_edges": list(spec.edges) if spec.options.bucketing == "on" else [],
        "bucket_set": spec.edges_name if spec.options.bucketing == "on" else "none",
        "cold_start_ms": first.latency_ms if first else None,
        "cold_start_compile_stall_ms": first.compile_stall_ms if first else None,
        "warmup": {**warmup.figures(), "compile_s": sum(e.duration_s or 0.0 for e in events)},
        "steady": {name: Spread.of(f[name] for f in steady_figures).as_dict()
                   for name in ("latency_p50_ms", "latency_p95_ms", "ttft_p50_ms", "tpot_ms",
                                "tokens_per_s")},
        "steady_passes": steady_figures,
        "steady_compiles": sum(1 for e in events if e.request_id in steady_ids),
        "compiles": segment.compiles if segment else 0,
        "recompiles": segment.recompiles if segment else 0,
        "compile_s": segment.compile_s if segment else 0.0,
        "graphs": segment.graphs if segment else 0,
        "graphs_per_function": per_function,
        "max_graphs_per_function": max(per_function.values(), default=0),
        "graph_breaks": segment.graph_breaks if segment else 0,
        "graph_break_sites": segment.graph_break_sites if segment else 0,
        "break_reasons": [{"reason": b.reason, "location": b.location, "count": b.count}
                          for b in data.breaks],
        "recompile_limit_hits": sum(1 for e in data.events if e.kind == "limit"),
        "compile_fallbacks": sum(1 for e in data.events if e.kind == "fallback"),
        "kv_cache_peak_bytes": segment.kv_cache_peak_bytes if segment else 0,
        "padding_waste": segment.padding_waste if segment else None,
        "drift": segment.drift.as_dict() if segment and segment.drift else None,
        "distinct_input_lengths": len({r.input_tokens for r in warmup.records}),
        "distinct_padded_lengths": len({r.padded_tokens for r in warmup.records}),
        "curve": compile_curve(warmup.records, data.events),
        "failed": len(errors),
        "errors": sorted(set(errors))[:5],
        "recompile_reasons": _distinct([e.reason for e in events if e.kind == "recompile"], 3),
        "notes": [n.text for n in data.notices],
    }


def _distinct(values, limit: int) -> list[str]:
    seen: list[str] = []
    for value in values:
        if value and value[:200] not in seen:
            seen.append(value[:200])
        if len(seen) >= limit:
            break
    return seen


def compile_curve(records: Sequence[RequestRecord], events) -> list[dict]:
    """After each warm-up request: distinct input shapes seen so far vs compiles so far."""
    shapes: set[int] = set()
    compiles = recompiles = 0
    compile_s = 0.0
    curve = []
    for record in records:
        shapes.add(record.padded_tokens)
        mine = [e for e in events
                if e.request_id == record.id and e.kind in ("compile", "recompile")]
        compiles += len(mine)
        recompiles += sum(1 for e in mine if e.kind == "recompile")
        compile_s += sum(e.duration_s or 0.0 for e in mine)
        curve.append({"request": record.id.split("@")[0], "input_tokens": record.input_tokens,
                      "padded_tokens": record.padded_tokens, "distinct_shapes": len(shapes),
                      "compiles": compiles, "recompiles": recompiles, "compile_s": compile_s})
    return curve


def bookkeeping_us(probe, calls: int = 200) -> float:
    """Microseconds of the probe's per-request work in steady state (what the engine calls
    around every request), timed directly."""
    leftover = probe.collect()          # nothing is pending after warm passes; keep it anyway
    start = time.perf_counter()
    for _ in range(calls):
        probe.set_context("bookkeeping", None)
        probe.collect()
        probe.graph_breaks()
        probe.set_context(None, None)
    elapsed = time.perf_counter() - start
    probe._events.extend(leftover)      # noqa: SLF001 — hand back anything collected above
    return elapsed / calls * 1e6


def measure_observer(engine, spec: RunSpec, repeats: int, hooks: RunHooks) -> dict:
    """Warm throughput with the probes installed vs uninstalled, on the same requests,
    alternating on/off passes (on, off, off, on, …) so slow drift hits both alike; and the
    probe's per-request bookkeeping timed on its own."""
    from probe.bench.stats import Spread, compare

    pairs = max(repeats, 3)
    samples: dict[str, list[float]] = {"on": [], "off": []}
    latencies: list[float] = []
    real_probe = engine.probe
    order = []
    for i in range(pairs):
        order.extend(["on", "off"] if i % 2 == 0 else ["off", "on"])
    for j, state in enumerate(order):
        if state == "off":
            real_probe.uninstall()
            engine.probe = _NullProbe(real_probe.graph_breaks())
        try:
            result = serve_pass(engine, spec, 100 + j, f"observer {state} {j + 1}/{len(order)}",
                                hooks.on_request)
        finally:
            if state == "off":
                engine.probe = real_probe
                real_probe.install()
        samples[state].append(result.figures()["tokens_per_s"])
        latencies.extend(r.latency_ms for r in result.records if r.ok)
    on, off = Spread.of(samples["on"]), Spread.of(samples["off"])
    comparison = compare(on, off, lower_is_better=False, better="faster", worse="slower")
    overhead = (1 - on.median / off.median) if on.median and off.median else None
    per_request_us = bookkeeping_us(real_probe)
    mean_latency_ms = sum(latencies) / len(latencies) if latencies else None
    return {"probes_on_tokens_per_s": on.as_dict(), "probes_off_tokens_per_s": off.as_dict(),
            "overhead_fraction": overhead, "verdict": comparison.verdict,
            "comparison": comparison.text, "order": order,
            "bookkeeping_us_per_request": per_request_us,
            "bookkeeping_fraction": (per_request_us / 1000 / mean_latency_ms
                                     if mean_latency_ms else None)}


def profile_requests(engine, spec: RunSpec, out_dir: Path, hooks: RunHooks,
                     count: int = 3) -> dict:
    """A torch.profiler Chrome trace of a few warm requests."""
    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU]
    if engine.device.type == "cuda":
        activities.append(ProfilerActivity.CUDA)
    few = replace(spec, requests=spec.requests[:count])
    folder = out_dir / "profile"
    folder.mkdir(parents=True, exist_ok=True)
    with profile(activities=activities) as prof:
        serve_pass(engine, few, 200, "profile", hooks.on_request)
    trace_path = folder / "trace.json"
    prof.export_chrome_trace(str(trace_path))
    sort = "self_cuda_time_total" if engine.device.type == "cuda" else "self_cpu_time_total"
    table = prof.key_averages().table(sort_by=sort, row_limit=15)
    (folder / "top_ops.txt").write_text(table + "\n", encoding="utf-8")
    return {"chrome_trace": str(trace_path.relative_to(out_dir)),
            "top_ops": str((folder / "top_ops.txt").relative_to(out_dir)),
            "requests": len(few.requests)}
