"""`infertop bench`: plan the study, run each distinct config once, write report.json,
report.md and a snapshot per run into DIR.

Runs that two experiments share (E1's compile=default is E4's planner row, E6's +KV cache step,
the roofline's compiled step and the observer's config) are run once and read by each.
"""

from __future__ import annotations

import argparse
import datetime as dt
import logging
import os
import random
import sys
import time
import traceback
import warnings
from pathlib import Path

import numpy as np

from probe.bench.batching import run_batching
from probe.bench.experiments import (ALL_EXPERIMENTS, EXPERIMENTS, NOT_IMPLEMENTED,
                                     OPEN_LOOP_EXPERIMENTS, Plan)
from probe.bench.runs import BenchRequest, RunContext, RunHooks, execute_group
from probe.errors import ConfigError

log = logging.getLogger(__name__)

REPORT_SCHEMA = "infertop-bench/1"
QUICK_MODEL = "t5-tiny"
DEFAULT_MODEL = "t5-small"
QUICK_REQUESTS, DEFAULT_REQUESTS = 3, 40
QUICK_REPEATS, DEFAULT_REPEATS = 2, 3
QUICK_BUCKETS, DEFAULT_BUCKETS = 2, 4
QUICK_E5_REQUESTS, DEFAULT_E5_REQUESTS = 2, 8
MAX_INPUT, MAX_OUTPUT = 512, 512
FULL_COMPILE_MODES = ("default", "reduce-overhead", "max-autotune")


def quick_compile_modes(device: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """--quick keeps compile=default; max-autotune (kernel autotuning, the longest compile)
    is left out, and on a CPU so is reduce-overhead, whose addition — CUDA graphs — needs a GPU."""
    if device.startswith("cuda"):
        return ("default", "reduce-overhead"), (
            "E1: --quick leaves out max-autotune (its kernel autotuning is the longest compile); "
            "run without --quick to include it",)
    return ("default",), (
        "E1: --quick leaves out max-autotune (its kernel autotuning is the longest compile) and, "
        "on a CPU, reduce-overhead (what it adds over default is CUDA graphs, which need a GPU); "
        "run without --quick to include them",)


QUICK_LEFT_OUT = (
    "E4: --quick computes the powers-of-two row (its shapes and padding follow from the "
    "lengths alone) instead of compiling and serving it; run without --quick to measure it",
    "E6: --quick stops at +bf16 (the +int8 step is one more cold compile of every shape); "
    "run without --quick to include it",
)


# -- the plan ---------------------------------------------------------------------------------
def parse_experiments(text: str | None) -> tuple[tuple[str, ...], list[str]]:
    """`E1,E4,roofline` → the known ids in study order, and notes on what was left out."""
    if not text:
        return ALL_EXPERIMENTS, []
    wanted, notes = [], []
    lookup = {name.lower(): name for name in ALL_EXPERIMENTS}
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        if part.upper() in NOT_IMPLEMENTED:
            notes.append(NOT_IMPLEMENTED[part.upper()])
            continue
        name = lookup.get(part.lower())
        if name is None:
            raise ConfigError(f"--experiments: unknown experiment {part!r}; choose from "
                              f"{', '.join(ALL_EXPERIMENTS)}")
        wanted.append(name)
    if not wanted:
        raise ConfigError("--experiments: nothing to run")
    return tuple(n for n in ALL_EXPERIMENTS if n in wanted), notes


def select_requests(trace, count: int, seed: int) -> tuple[BenchRequest, ...]:
    """A fixed-seed sample of the trace, in trace order: the same list for every config."""
    indices = sorted(random.Random(seed).sample(range(len(trace.requests)),
                                                min(count, len(trace.requests))))
    return tuple(BenchRequest(id=trace.requests[i].id or f"r{i}",
                              input_length=trace.requests[i].input_length,
                              output_length=max(1, trace.requests[i].output_length),
                              text=trace.requests[i].text) for i in indices)


def output_classes(trace) -> dict[str, int]:
    """Short, medium and long outputs of this traffic: its 10th, 50th and 95th percentiles."""
    values = np.array(trace.output_lengths(), dtype=float)
    short, medium, long = (max(2, int(round(v))) for v in np.percentile(values, [10, 50, 95]))
    medium = max(medium, short + 1)
    long = max(long, medium + 1)
    return {"short": short, "medium": medium, "long": long}


def make_plan(*, model: str, trace_name: str, device: str, quick: bool, requests: int,
              bucket_count: int, seed: int, e5_count: int) -> Plan:
    from workloads.buckets import plan_buckets, powers_of_two_plan
    from workloads.fitting import fit_to_model
    from workloads.trace import load_trace

    trace, _fit = fit_to_model(load_trace(trace_name), max_input=MAX_INPUT,
                               max_output=MAX_OUTPUT, policy="clip")
    if not trace.requests:
        raise ConfigError(f"trace {trace_name!r} has no requests to replay")
    chosen = select_requests(trace, requests, seed)
    lengths = [r.input_length for r in chosen]
    classes = output_classes(trace)
    inputs = chosen[:e5_count]
    e5 = {name: tuple(BenchRequest(id=f"{r.id}-{name}", input_length=r.input_length,
                                   output_length=tokens, text=r.text) for r in inputs)
          for name, tokens in classes.items()}
    modes, left_out = quick_compile_modes(device) if quick else (FULL_COMPILE_MODES, ())
    if quick:
        left_out = left_out + QUICK_LEFT_OUT
    return Plan(model=model, trace=trace_name, device=device, quick=quick, requests=chosen,
                bucket_count=bucket_count,
                planner_edges=tuple(plan_buckets(lengths, bucket_count).edges),
                pow2_edges=tuple(powers_of_two_plan(lengths).edges),
                trace_input_lengths=tuple(trace.input_lengths()), e5_requests=e5,
                compile_modes=modes, left_out=left_out, serve_pow2=not quick, e6_int8=not quick)


def collect_runs(plan: Plan, experiments: tuple[str, ...]):
    """Distinct runs in first-use order: key → [spec, extras, [(experiment, role)]], and the
    units to execute: one key, or the keys of an interleaved group (eager configs whose passes
    alternate on one engine)."""
    runs: dict[str, list] = {}
    units: list[tuple[str, ...]] = []
    for name in experiments:
        if name in OPEN_LOOP_EXPERIMENTS:
            continue
        experiment = EXPERIMENTS[name]
        specs = experiment.runs(plan)
        grouped: dict[str, tuple[str, ...]] = {}
        for roles in experiment.groups(plan):
            keys = tuple(specs[r].key for r in roles)
            if (len(set(keys)) == len(keys) and not any(k in runs for k in keys)
                    and not any(specs[r].options.compiled for r in roles)):
                for role in roles:
                    grouped[role] = keys
        for role, spec in specs.items():
            extras = experiment.extras.get(role, frozenset())
            if spec.key not in runs:
                runs[spec.key] = [spec, frozenset(), []]
                unit = grouped.get(role, (spec.key,))
                if unit not in units:
                    units.append(unit)
            runs[spec.key][1] = runs[spec.key][1] | extras
            runs[spec.key][2].append((name, role))
    return runs, units


# -- torch trace ------------------------------------------------------------------------------
class TorchTrace:
    """Structured compile logs for tlparse in DIR/torch_trace, as TORCH_TRACE would write.
    The engine's probe re-initialises torch's logging on install, so attach after each engine."""

    def __init__(self, folder: Path) -> None:
        from torch._logging._internal import LazyTraceHandler, TorchLogsFormatter
        folder.mkdir(parents=True, exist_ok=True)
        self.folder = folder
        self.handler = LazyTraceHandler(str(folder))
        self.handler.setFormatter(TorchLogsFormatter(trace=True))

    def attach(self, _engine=None) -> None:
        from torch._logging._internal import trace_log
        trace_log.setLevel(logging.DEBUG)
        if self.handler not in trace_log.handlers:
            trace_log.addHandler(self.handler)

    def close(self) -> None:
        from torch._logging._internal import trace_log
        trace_log.removeHandler(self.handler)
        self.handler.close()


# -- environment and roofline -------------------------------------------------------------------
def bench_environment(device) -> dict:
    import torch
    from probe.snapshot import environment
    env = environment(device)
    try:
        import torch._inductor.config as inductor_config
        env["inductor_fx_graph_cache"] = bool(inductor_config.fx_graph_cache)
    except Exception:  # an older torch: leave it out
        pass
    env["inductor_cache_dir"] = os.environ.get("TORCHINDUCTOR_CACHE_DIR", "default")
    env["torch_threads"] = torch.get_num_threads()
    env["load_average_start"] = _load_average()
    return env


def _load_average() -> list[float] | None:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


def measure_roofline(loaded, device) -> dict:
    from probe.roofline import (decode_step_bytes, measure_bandwidth, measure_matmul_gflops,
                                      step_bytes_by_precision)
    try:
        step = decode_step_bytes(loaded.model, kv_cache=True)
        bandwidth = measure_bandwidth(device)
        gflops = measure_matmul_gflops(device)
    except Exception as exc:  # a failed measurement is reported, not fatal
        return {"error": f"{type(exc).__name__}: {exc}"}
    return {"step_bytes": step.as_dict(), "bandwidth": bandwidth.as_dict(),
            "matmul_gflops": gflops,
            "step_bytes_by_precision": step_bytes_by_precision(loaded.model)}


# -- checks the issue names ---------------------------------------------------------------------
def acceptance_checks(sections: dict) -> dict:
    """The properties `bench --quick` is expected to show, read back from the sections."""
    checks: dict = {}
    e2 = sections.get("E2", {}).get("configs", {})
    if e2:
        checks["e2_hf_generate_breaks"] = e2.get("hf-generate", {}).get("graph_breaks")
        checks["e2_fullgraph_breaks"] = e2.get("fullgraph", {}).get("graph_breaks")
        checks["e2_ok"] = bool((checks["e2_hf_generate_breaks"] or 0) > 0
                               and checks["e2_fullgraph_breaks"] == 0)
    e3 = sections.get("E3", {}).get("configs", {}).get("off", {})
    if e3.get("curve"):
        curve = e3["curve"]
        grows = all(b["recompiles"] >= a["recompiles"] for a, b in zip(curve, curve[1:]))
        more = curve[-1]["recompiles"] > curve[0]["recompiles"]
        checks["e3_recompiles_by_distinct_length"] = [
            [p["distinct_shapes"], p["recompiles"]] for p in curve]
        checks["e3_ok"] = bool(grows and more and curve[-1]["distinct_shapes"] > 1)
    e4 = sections.get("E4", {})
    if e4.get("configs"):
        planner, pow2 = e4["configs"].get("planner", {}), e4["configs"].get("pow2", {})
        checks["e4_planner_graphs"] = planner.get("compiled_graphs")
        checks["e4_K"] = e4.get("K")
        checks["e4_planner_waste_pct"] = planner.get("padding_waste_pct")
        checks["e4_pow2_waste_pct"] = pow2.get("padding_waste_pct")
        checks["e4_ok"] = bool(planner.get("compiled_graphs") is not None
                               and planner["compiled_graphs"] <= e4["K"]
                               and planner.get("padding_waste_pct") is not None
                               and pow2.get("padding_waste_pct") is not None
                               and planner["padding_waste_pct"] < pow2["padding_waste_pct"])
    e5 = sections.get("E5", {}).get("configs", {})
    if e5.get("long/on"):
        on = (e5["long/on"].get("latency_p50_ms") or {}).get("median")
        off = (e5["long/off"].get("latency_p50_ms") or {}).get("median")
        checks["e5_long_on_ms"], checks["e5_long_off_ms"] = on, off
        checks["e5_ok"] = bool(on is not None and off is not None and on < off)
    e6 = sections.get("E6", {}).get("table", {})
    if e6:
        empty = [(row[0], column) for row in e6.get("rows", [])
                 for column, value in zip(e6["columns"], row) if str(value).strip() in ("", "None")]
        checks["e6_empty_cells"] = empty
        checks["e6_ok"] = not empty and len(e6.get("rows", [])) > 0
    return checks


# -- the command ------------------------------------------------------------------------------
def run_bench(args: argparse.Namespace) -> int:
    started = time.perf_counter()
    quick = bool(getattr(args, "quick", False))
    model = getattr(args, "model", None) or (QUICK_MODEL if quick else DEFAULT_MODEL)
    count = args.requests or (QUICK_REQUESTS if quick else DEFAULT_REQUESTS)
    repeats = args.repeats or (QUICK_REPEATS if quick else DEFAULT_REPEATS)
    bucket_count = getattr(args, "bucket_count", None) or (QUICK_BUCKETS if quick else DEFAULT_BUCKETS)
    seed = getattr(args, "seed", 0) or 0
    if count < 1 or repeats < 1 or bucket_count < 1:
        raise ConfigError("--requests, --repeats and --bucket-count must be at least 1")
    experiments, left_out = parse_experiments(args.experiments)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    torch_trace = TorchTrace(out / "torch_trace") if getattr(args, "torch_trace", False) else None

    import torch
    from probe.bench.progress import Progress, estimate_s
    from probe.bench.report import render_markdown
    from probe.device_probe import resolve_device
    from probe.models import load_model
    from probe.snapshot import write_json_atomic

    if getattr(args, "threads", None):
        torch.set_num_threads(args.threads)
    device = resolve_device(args.device)
    loaded = load_model(model)
    plan = make_plan(model=model, trace_name=args.trace, device=str(device), quick=quick,
                     requests=count, bucket_count=bucket_count, seed=seed,
                     e5_count=QUICK_E5_REQUESTS if quick else min(count, DEFAULT_E5_REQUESTS))
    runs, units = collect_runs(plan, experiments)
    env = bench_environment(device)
    env["device"] = str(device)
    if "roofline" in experiments:
        print("measuring memory bandwidth and GEMM throughput for the roofline…", file=sys.stderr)
        env["roofline"] = measure_roofline(loaded, device)

    def passes_of(key: str) -> int:
        extra = 2 * max(repeats, 3) if "observer" in runs[key][1] else 0
        return repeats + 1 + extra

    progress = Progress([sum(estimate_s(runs[k][0], model=model, passes=passes_of(k)) for k in unit)
                         for unit in units])
    results: dict[str, dict] = {}
    context = RunContext(model=model, device=str(device), loaded=loaded,
                         max_input=MAX_INPUT, repeats=repeats, out_dir=out,
                         compile_backend=getattr(args, "compile_backend", None) or "inductor",
                         trace_info={"name": args.trace, "seed": seed},
                         keep_tokens=bool(getattr(args, "tokens", False)))
    if getattr(args, "profile", False):
        profiled = next((k for k, (s, _, _) in runs.items()
                         if s.options.compiled and s.options.decode == "fullgraph"
                         and s.options.kv_cache == "on"),
                        next(k for unit in units if len(unit) == 1 for k in unit))
        runs[profiled][1] = runs[profiled][1] | {"profile"}
    interrupted = False
    # torch and transformers warn about their own internals while compiling (deprecations,
    # dynamo hints); none of it changes a measurement, and it would bury the progress line.
    muted = warnings.catch_warnings()
    muted.__enter__()
    warnings.simplefilter("ignore")
    try:
        for index, unit in enumerate(units):
            specs = [runs[key][0] for key in unit]
            users = [u for key in unit for u in runs[key][2]]
            names = ", ".join(sorted({e for e, _ in users}, key=ALL_EXPERIMENTS.index))
            label = " | ".join(s.options.label() for s in specs)
            if specs[0].requests_name != "replayed":
                label += f" [{specs[0].requests_name}]"
            progress.start_run(index, names, label)
            served = [0]
            total = sum(len(runs[k][0].requests) * passes_of(k) for k in unit)

            def on_request(phase, done, n, _total=total, _served=served):
                _served[0] += 1
                progress.request_done(phase, done, n, min(1.0, _served[0] / _total))

            def after_engine(engine):
                if torch_trace:
                    torch_trace.attach(engine)

            try:
                results.update(execute_group(
                    specs, context, RunHooks(on_request, after_engine),
                    extras={key: runs[key][1] for key in unit}))
            except KeyboardInterrupt:
                raise
            except Exception as exc:  # one run's failure is reported; the study goes on
                log.debug("run %s failed", unit, exc_info=True)
                for spec in specs:
                    results[spec.key] = {"key": spec.key, "label": spec.options.label(),
                                         "error": f"{type(exc).__name__}: {exc}"[:500],
                                         "traceback": traceback.format_exc()[-2000:]}
                progress.message(f"run {' + '.join(unit)} failed: {type(exc).__name__}: {exc}")
            progress.finish_run()
    except KeyboardInterrupt:
        interrupted = True
        progress.message("interrupted: writing the report of the runs that finished")
    finally:
        muted.__exit__(None, None, None)
        progress.close()
        if torch_trace:
            torch_trace.close()

    e7 = None
    if "E7" in experiments and not interrupted:
        e7 = run_batching(model=model, device=str(device), loaded=loaded, quick=quick,
                          requests=count, message=progress.message)
        results["E7"] = e7["results"]
    env["load_average_end"] = _load_average()
    calibrations = [v for r in results.values() for v in (r.get("calibration_ms") or []) if v]
    if calibrations:
        env["calibration_ms"] = {"min": min(calibrations), "max": max(calibrations),
                                 "drift": max(calibrations) / min(calibrations)}
    sections = {}
    for name in experiments:
        if name == "E7":
            if e7 is not None:
                sections[name] = e7["section"]
            continue
        experiment = EXPERIMENTS[name]
        role_results = {role: results.get(spec.key)
                        for role, spec in experiment.runs(plan).items()}
        try:
            sections[name] = experiment.build(plan, role_results, env)
        except Exception as exc:  # a section that cannot be built says so
            sections[name] = {"id": name, "title": experiment.title,
                              "error": f"{type(exc).__name__}: {exc}",
                              "traceback": traceback.format_exc()[-2000:]}
    report = {
        "schema": REPORT_SCHEMA,
        "created": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "command": "infertop " + " ".join(sys.argv[1:]),
        "settings": {"model": model, "trace": args.trace, "device": str(device),
                     "requests": len(plan.requests), "repeats": repeats, "quick": quick,
                     "bucket_count": bucket_count, "seed": seed,
                     "experiments": list(experiments), "compile_backend": context.compile_backend,
                     "torch_trace": bool(torch_trace), "profile": bool(getattr(args, "profile", False))},
        "environment": env,
        "plan": {"requests": [vars(r) | {"text": None} for r in plan.requests],
                 "planner_edges": list(plan.planner_edges), "pow2_edges": list(plan.pow2_edges),
                 "e5_outputs": {k: v[0].output_length for k, v in plan.e5_requests.items()},
                 "compile_modes": list(plan.compile_modes)},
        "left_out": list(left_out) + list(plan.left_out),
        "experiments": sections,
        "runs": results,
        "checks": acceptance_checks(sections),
        "wall_s": time.perf_counter() - started,
        "incomplete": interrupted,
        "files": {"report_md": "report.md", "runs": "runs/",
                  "torch_trace": sorted(str(p.relative_to(out))
                                        for p in (out / "torch_trace").glob("*.log"))
                  if torch_trace else None,
                  "profile": "profile/" if getattr(args, "profile", False) else None},
    }
    write_json_atomic(out / "report.json", report)
    (out / "report.md").write_text(render_markdown(report), encoding="utf-8")
    failed = [k for k, r in results.items() if "error" in r and "steady" not in r]
    print(f"wrote {out / 'report.md'} and {out / 'report.json'} "
          f"({len(results)} runs, {len(failed)} failed) in {report['wall_s']:.0f} s")
    if torch_trace:
        for log_file in sorted((out / "torch_trace").glob("*.log")):
            print(f"TORCH_TRACE log: {log_file} (read it with: tlparse {log_file})")
    return 130 if interrupted else 0
