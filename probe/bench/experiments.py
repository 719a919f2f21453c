"""The study's experiments: which runs each needs, and how its section of the report is built
from their results. One variable at a time; observed and root cause come from the numbers.

Every compiled run uses the same fixed settings unless the experiment varies them: decode
fullgraph, the planner's buckets, KV cache on, fp32, dynamic shapes off (REFERENCE below).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from probe.bench import fmt
from probe.bench.runs import EXTRA_OBSERVER, BenchRequest, RunSpec
from probe.bench.stats import Spread, compare
from probe.drift import RANDOM_WEIGHTS_CAVEAT
from probe.drift import REFERENCE as DRIFT_REFERENCE
from probe.models import PRESETS
from probe.options import OptConfig
from probe.settings import EngineSettings

REFERENCE = OptConfig(compile="default", decode="fullgraph", bucketing="on")
EAGER_FULLGRAPH = OptConfig(decode="fullgraph", bucketing="on")
HF_EAGER = OptConfig()

ALL_EXPERIMENTS = ("E1", "E2", "E3", "E4", "E5", "E6", "E7", "roofline", "observer")
# E7 replays open loop (batching only shows under queueing): its own runner, probe/bench/batching.py
OPEN_LOOP_EXPERIMENTS = ("E7",)
NOT_IMPLEMENTED: dict[str, str] = {}


@dataclass(frozen=True)
class Plan:
    """What every experiment shares: the replayed requests and the bucket sets."""
    model: str
    trace: str
    device: str
    quick: bool
    requests: tuple[BenchRequest, ...]
    bucket_count: int
    planner_edges: tuple[int, ...]
    pow2_edges: tuple[int, ...]
    trace_input_lengths: tuple[int, ...]           # the whole fitted trace (whole-trace waste)
    e5_requests: dict[str, tuple[BenchRequest, ...]] = field(default_factory=dict)
    compile_modes: tuple[str, ...] = ("default", "reduce-overhead", "max-autotune")
    left_out: tuple[str, ...] = ()
    serve_pow2: bool = True             # False: E4's powers-of-two row is computed, not served
    e6_int8: bool = True                # False: E6 stops at +bf16

    @property
    def e6_steps(self) -> tuple[tuple[str, OptConfig], ...]:
        return E6_STEPS if self.e6_int8 else E6_STEPS[:-1]

    @property
    def planner_name(self) -> str:
        return f"planner (K={self.bucket_count})"

    def spec(self, options: OptConfig, *, edges: str = "planner",
             requests: tuple[BenchRequest, ...] | None = None,
             requests_name: str = "replayed") -> RunSpec:
        edge_set, name = {"planner": (self.planner_edges, self.planner_name),
                          "pow2": (self.pow2_edges, "powers of two"),
                          "none": ((), "none")}[edges]
        if options.bucketing != "on":
            edge_set, name = (), "none"
        return RunSpec(options=options, requests=requests or self.requests,
                       requests_name=requests_name, edges=edge_set, edges_name=name)


@dataclass(frozen=True)
class Experiment:
    id: str
    title: str
    hypothesis: str
    variable: str
    control: str
    expected: str
    runs: Callable[[Plan], dict[str, RunSpec]]
    build: Callable[[Plan, dict[str, dict | None], dict], dict]
    extras: dict[str, frozenset[str]] = field(default_factory=dict)
    # roles whose runs share one engine with interleaved passes (eager configs only)
    groups: Callable[[Plan], list[tuple[str, ...]]] = lambda plan: []


# -- shared helpers ---------------------------------------------------------------------------
def _spread(result: dict | None, name: str) -> Spread:
    return Spread.from_dict((result or {}).get("steady", {}).get(name))


def _median(result: dict | None, name: str) -> float | None:
    return _spread(result, name).median


def metrics(result: dict | None) -> dict:
    """The figures a section keeps per config (every number; the full run is under `runs`)."""
    if not result:
        return {"error": "not run"}
    if "error" in result and "steady" not in result:
        return {"error": result["error"]}
    keep = ("key", "label", "options", "requests", "bucket_set", "bucket_edges", "compile_s",
            "compiles", "recompiles", "graphs", "graphs_per_function", "max_graphs_per_function",
            "graph_breaks", "graph_break_sites", "cold_start_ms", "cold_start_compile_stall_ms", "steady_compiles",
            "recompile_limit_hits", "compile_fallbacks", "kv_cache_peak_bytes", "weight_bytes",
            "padding_waste", "drift", "distinct_input_lengths", "distinct_padded_lengths", "failed",
            "errors", "notes", "snapshot")
    out = {k: result.get(k) for k in keep if k in result}
    for name in ("latency_p50_ms", "latency_p95_ms", "ttft_p50_ms", "tpot_ms", "tokens_per_s"):
        out[name] = result.get("steady", {}).get(name)
    out["padding_waste_pct"] = (None if result.get("padding_waste") is None
                                else 100 * result["padding_waste"])
    return out


DRIFT_TOLERANCE = 1.5    # calibration moving less than this between runs is ignored


def machine_drift(*results: dict | None) -> float | None:
    """How much the machine's speed moved across these runs: max / min of their calibration
    times (a fixed small workload timed before and after each run). None: not measured."""
    values = [v for r in results if r for v in (r.get("calibration_ms") or []) if v]
    if len(values) < 2:
        return None
    return max(values) / min(values)


def _vs(result: dict | None, control: dict | None, name: str = "latency_p50_ms",
        lower_is_better: bool = True) -> dict:
    """`result` against `control` on one warm metric. Overlapping repeat ranges are noise; so
    is a difference smaller than the machine's own speed change between the two runs (runs of
    one interleaved group share the machine's state, so their comparison needs no such care)."""
    unusable = _failed_text(result) or _failed_text(control)
    if unusable:
        return {"metric": name, "ratio": None, "verdict": "not comparable", "text": unusable,
                "machine_drift": None}
    a, b = _spread(result, name), _spread(control, name)
    c = compare(a, b, lower_is_better=lower_is_better)
    out = {"metric": name, "ratio": c.ratio, "verdict": c.verdict, "text": c.text}
    same_group = bool(result and control and result.get("group")
                      and result.get("group") == control.get("group"))
    drift = None if same_group else machine_drift(result, control)
    out["machine_drift"] = drift
    if (c.verdict in ("faster", "slower") and drift and drift > DRIFT_TOLERANCE
            and max(c.ratio, 1 / c.ratio) < drift):
        out["verdict"] = "within noise"
        out["text"] = (f"within noise: the machine's own speed moved {drift:.2f}× between these "
                       f"runs ({c.text} by the medians)")
    return out


def _failed_text(result: dict | None) -> str | None:
    """Why a run cannot be compared with another, or None. A run that lost requests is not
    comparable: its latencies describe only the requests that survived."""
    if not result:
        return "not run"
    if "error" in result and "steady" not in result:
        return f"run failed: {result['error']}"
    if result.get("failed"):
        first = (result.get("errors") or ["?"])[0]
        return f"not comparable: {result['failed']} requests failed ({first})"
    return None


def _stability(result: dict | None) -> str:
    if not result or "steady" not in result:
        return fmt.NA
    if result.get("compile_fallbacks"):
        return "fell back to eager (compile failed)"
    if result.get("recompile_limit_hits"):
        return "recompile limit hit"
    if result.get("steady_compiles"):
        return f"{result['steady_compiles']} compiles after warm-up"
    if result["options"]["compile"] == "off":
        return "eager (nothing to compile)"
    return "stable: no compiles after warm-up"


def _compiled_text(result: dict) -> str:
    return (f"{result['compiles'] + result['recompiles']} compiles ({result['graphs']} graphs) "
            f"in {fmt.seconds(result['compile_s'])}")


def _section(experiment: Experiment, plan: Plan, *, configs: dict, table: dict,
             observed: list[str], root_cause: list[str], extra_tables: list[dict] | None = None,
             notes: list[str] | None = None, **more) -> dict:
    return {"id": experiment.id, "title": experiment.title, "hypothesis": experiment.hypothesis,
            "variable": experiment.variable, "control": experiment.control,
            "expected": experiment.expected, "observed": observed, "root_cause": root_cause,
            "configs": configs, "table": table, "extra_tables": extra_tables or [],
            "notes": notes or [], **more}


def _warm_row(result: dict | None) -> list[str]:
    """cold start, warm p50, warm p95, ms/token, tokens/s"""
    if _failed_text(result):
        return [_failed_text(result)] + [fmt.NA] * 4
    return [fmt.ms(result.get("cold_start_ms")), fmt.spread(result["steady"]["latency_p50_ms"]),
            fmt.spread(result["steady"]["latency_p95_ms"]), fmt.spread(result["steady"]["tpot_ms"]),
            fmt.spread(result["steady"]["tokens_per_s"], lambda v: fmt.num(v, 0))]


# -- E1 compile modes -------------------------------------------------------------------------
def _e1_runs(plan: Plan) -> dict[str, RunSpec]:
    runs = {"off": plan.spec(EAGER_FULLGRAPH)}
    for mode in plan.compile_modes:
        runs[mode] = plan.spec(REFERENCE.with_option("compile", mode))
    return runs


def _e1_build(plan: Plan, results: dict, env: dict) -> dict:
    exp = EXPERIMENTS["E1"]
    off = results.get("off")
    rows, configs, observed, cause = [], {}, [], []
    for role in ["off", *plan.compile_modes]:
        result = results.get(role)
        configs[role] = metrics(result)
        if role != "off" and result and "steady" in result:
            configs[role]["vs_off"] = _vs(result, off)
        compile_cell = (fmt.NA if _failed_text(result) else
                        ("—" if role == "off" else fmt.seconds(result["compile_s"])))
        graphs = fmt.NA if _failed_text(result) else str(result["graphs"])
        vs = configs[role].get("vs_off", {}).get("text", "control" if role == "off" else fmt.NA)
        rows.append([f"compile={role}", compile_cell, graphs, *_warm_row(result), vs])
    eager_p50 = _median(off, "latency_p50_ms")
    for mode in plan.compile_modes:
        result = results.get(mode)
        if _failed_text(result):
            observed.append(f"compile={mode}: {_failed_text(result)}.")
            continue
        cold_ratio = (result["cold_start_ms"] / off["cold_start_ms"]
                      if off and off.get("cold_start_ms") else None)
        observed.append(
            f"compile={mode}: {_compiled_text(result)}; the first request took "
            f"{fmt.ms(result['cold_start_ms'])}"
            + (f" ({cold_ratio:.0f}× eager's first request)" if cold_ratio else "")
            + f"; warm p50 {fmt.spread(result['steady']['latency_p50_ms'])} vs "
              f"{fmt.ms(eager_p50)} eager: {configs[mode]['vs_off']['text']}.")
    default = results.get("default")
    if default and "steady" in default:
        for other in ("reduce-overhead", "max-autotune"):
            result = results.get(other)
            if other in plan.compile_modes and result and "steady" in result:
                versus = _vs(result, default)
                configs[other]["vs_default"] = versus
                extra = result["compile_s"] - default["compile_s"]
                observed.append(f"{other} vs default: warm p50 {versus['text']}; compile "
                                f"{'+' if extra >= 0 else '−'}{fmt.seconds(abs(extra))}.")
        gain = configs["default"].get("vs_off", {})
        if gain.get("verdict") == "faster":
            cause.append("Compiling fuses the decode step's many small operations into a few "
                         "kernels; at batch 1 the eager step's time is mostly per-operation "
                         "overhead (see Roofline), which fusion removes. The price is paid "
                         f"before the first token of every new shape: "
                         f"{fmt.seconds(default['compile_s'])} here.")
        else:
            cause.append(f"Compiling did not measurably speed the warm step here "
                         f"({gain.get('text', fmt.NA)}); its compile time "
                         f"({fmt.seconds(default['compile_s'])}) is pure cost at this size.")
    if "reduce-overhead" in plan.compile_modes:
        if env.get("device", "cpu").startswith("cuda"):
            cause.append("reduce-overhead records the compiled step as a CUDA graph and replays "
                         "it, removing per-kernel launch cost — the part of a small model's "
                         "step that fusion alone leaves.")
        else:
            cause.append("reduce-overhead adds CUDA graphs on top of default; a CPU has none, so "
                         "it compiles the same kernels and any difference from default is noise "
                         "or compile-time variance.")
    if "max-autotune" in plan.compile_modes:
        cause.append("max-autotune benchmarks candidate kernels (GEMM templates, tile sizes) "
                     "while compiling: it pays more compile time for kernels that help only "
                     "when the matrix products dominate the step.")
    notes = [n for n in plan.left_out if n.startswith("E1")]
    table = {"columns": ["config", "compile", "graphs", "cold start", "warm p50", "warm p95",
                         "ms/token", "tokens/s", "warm p50 vs off"], "rows": rows}
    return _section(exp, plan, configs=configs, table=table, observed=observed,
                    root_cause=cause, notes=notes)


# -- E2 graph breaks --------------------------------------------------------------------------
HF_COMPILED = OptConfig(compile="default", decode="hf-generate", bucketing="on")


def _e2_runs(plan: Plan) -> dict[str, RunSpec]:
    return {"hf-generate": plan.spec(HF_COMPILED), "fullgraph": plan.spec(REFERENCE)}


def _break_causes(reasons: list[dict]) -> list[str]:
    text = " ".join(r["reason"] for r in reasons)
    causes = []
    if ".item()" in text or "item()" in text:
        causes.append("`.item()` reads a tensor's value into Python (generate()'s loop "
                      "checks it every step)")
    if "Data-dependent" in text or "Data dependent" in text or "data-dependent" in text:
        causes.append("data-dependent control flow: the stopping criteria branch on "
                      "tensor values (`unfinished_sequences.max() == 0`)")
    if "disable" in text:
        causes.append("functions marked torch.compiler.disable end the graph (the token "
                      "streamer's `put`, as any streaming output does, and HF helpers)")
    return causes


def _e2_build(plan: Plan, results: dict, env: dict) -> dict:
    exp = EXPERIMENTS["E2"]
    hf, fg = results.get("hf-generate"), results.get("fullgraph")
    rows, configs, observed, cause, reason_rows = [], {}, [], [], []
    for role, result in (("hf-generate", hf), ("fullgraph", fg)):
        configs[role] = metrics(result)
        if _failed_text(result):
            rows.append([f"decode={role}", _failed_text(result)] + [fmt.NA] * 8)
            continue
        configs[role]["break_reasons"] = result["break_reasons"]
        places = len({r["location"] for r in result["break_reasons"]})
        configs[role]["break_locations"] = places
        rows.append([f"decode={role}", str(result["graphs"]), str(result["graph_breaks"]),
                     str(places), fmt.seconds(result["compile_s"]), *_warm_row(result)])
        for reason in sorted(result["break_reasons"], key=lambda r: -r["count"])[:10]:
            reason_rows.append([role, reason["reason"][:160], reason["location"],
                                str(reason["count"])])
    if hf and fg and "steady" in hf and "steady" in fg:
        configs["fullgraph"]["vs_hf_generate"] = _vs(fg, hf)
        observed.append(f"hf-generate under torch.compile: {hf['graph_breaks']} graph breaks at "
                        f"{configs['hf-generate']['break_locations']} places in generate(), "
                        f"{_compiled_text(hf)}; warm p50 "
                        f"{fmt.spread(hf['steady']['latency_p50_ms'])}.")
        observed.append(f"fullgraph: {fg['graph_breaks']} breaks, {_compiled_text(fg)} "
                        f"({_per_function(fg)}); warm p50 "
                        f"{fmt.spread(fg['steady']['latency_p50_ms'])}: "
                        f"{configs['fullgraph']['vs_hf_generate']['text']} than hf-generate.")
        causes = _break_causes(hf["break_reasons"])
        if causes:
            cause.append("generate()'s breaks come from " + "; ".join(causes) + ".")
        cause.append("Each break returns to Python and starts another graph, so one decode step "
                     "runs as several graphs with interpreted glue in between, each guarded. "
                     "The fullgraph path decodes a fixed number of tokens over a static cache "
                     "and reads no value back during the loop, so every step is one graph "
                     "(compiled with fullgraph=True, which would raise on any break).")
    table = {"columns": ["config", "graphs", "graph breaks", "break places", "compile",
                         "cold start", "warm p50", "warm p95", "ms/token", "tokens/s"],
             "rows": rows}
    extra = [{"title": "Graph-break reasons (dynamo's words, by count)",
              "columns": ["decode", "reason", "location", "count"], "rows": reason_rows}]
    return _section(exp, plan, configs=configs, table=table, observed=observed,
                    root_cause=cause, extra_tables=extra)


def _per_function(result: dict) -> str:
    parts = [f"{n} {name}" for name, n in sorted(result.get("graphs_per_function", {}).items())]
    return ", ".join(parts) or "no graphs"


# -- E3 dynamic shapes ------------------------------------------------------------------------
STATIC_UNBUCKETED = OptConfig(compile="default", decode="fullgraph")


def _e3_runs(plan: Plan) -> dict[str, RunSpec]:
    return {"off": plan.spec(STATIC_UNBUCKETED, edges="none"),
            "on": plan.spec(STATIC_UNBUCKETED.with_option("dynamic", "on"), edges="none")}


def _e3_build(plan: Plan, results: dict, env: dict) -> dict:
    exp = EXPERIMENTS["E3"]
    off, on = results.get("off"), results.get("on")
    rows, configs, observed, cause = [], {}, [], []
    for role, result in (("off", off), ("on", on)):
        configs[role] = metrics(result)
        if _failed_text(result):
            rows.append([f"dynamic={role}", _failed_text(result)] + [fmt.NA] * 7)
            continue
        configs[role]["curve"] = result["curve"]
        per = (result["compile_s"] / (result["compiles"] + result["recompiles"])
               if result["compiles"] + result["recompiles"] else None)
        configs[role]["compile_s_per_compile"] = per
        rows.append([f"dynamic={role}", str(result["distinct_input_lengths"]),
                     str(result["compiles"]), str(result["recompiles"]),
                     fmt.seconds(result["compile_s"]), fmt.seconds(per),
                     *_warm_row(result)[:3]])
    curve_rows = []
    if off and "curve" in off:
        on_curve = (on or {}).get("curve") or []
        for i, point in enumerate(off["curve"]):
            other = on_curve[i] if i < len(on_curve) else {}
            curve_rows.append([str(i + 1), str(point["input_tokens"]),
                               str(point["distinct_shapes"]), str(point["recompiles"]),
                               str(other.get("recompiles", fmt.NA))])
        lengths = [p["distinct_shapes"] for p in off["curve"]]
        recompiles = [p["recompiles"] for p in off["curve"]]
        new_lengths = max(lengths[-1] - 1, 0)
        per_length = recompiles[-1] / new_lengths if new_lengths else None
        configs["off"]["recompiles_per_new_length"] = per_length
        observed.append(
            f"dynamic off: recompiles grew with the distinct lengths seen — "
            f"{' → '.join(str(r) for r in _dedupe_steps(recompiles))} over 1 → {lengths[-1]} "
            f"lengths"
            + (f" ({per_length:.1f} per new length: one per compiled function)" if per_length else "")
            + f"; {fmt.seconds(off['compile_s'])} of compiling in all"
            + (f", {fmt.seconds(configs['off']['compile_s_per_compile'])} each." if configs['off'].get('compile_s_per_compile') else "."))
        if off.get("recompile_limit_hits") or off.get("compile_fallbacks"):
            observed.append("dynamic off hit torch._dynamo's recompile limit: with fullgraph=True "
                            "that is a hard failure, and the engine served the rest of the run "
                            "eager.")
    if on and "steady" in on:
        observed.append(f"dynamic on: {_compiled_text(on)} ({on['recompiles']} recompiles) over "
                        f"the same {on['distinct_input_lengths']} lengths.")
        if off and "steady" in off:
            configs["on"]["vs_off"] = _vs(on, off)
            observed.append(f"warm p50 with dynamic shapes: {configs['on']['vs_off']['text']} "
                            f"than static.")
    reasons = (off or {}).get("recompile_reasons") or []
    cause.append("With dynamic=False every compiled function is specialised to the exact input "
                 "length, and a guard checks it on every call"
                 + (f" (dynamo: \"{reasons[0][:120]}\")" if reasons else "")
                 + ": a new length fails the guards and compiles a new graph for the encoder, "
                   "the first decoder step and the decode step. dynamic=True traces the length "
                   "as a symbol, so one graph serves every length; its kernels cannot "
                   "specialise on the size, which may cost warm latency.")
    extra = [{"title": "Recompiles as distinct lengths arrive (warm-up pass, in order)",
              "columns": ["request", "input tokens", "distinct lengths so far",
                          "recompiles (dynamic off)", "recompiles (dynamic on)"],
              "rows": curve_rows}]
    table = {"columns": ["config", "distinct lengths", "compiles", "recompiles", "compile",
                         "per compile", "cold start", "warm p50", "warm p95"], "rows": rows}
    return _section(exp, plan, configs=configs, table=table, observed=observed,
                    root_cause=cause, extra_tables=extra)


def _dedupe_steps(values: list[int]) -> list[int]:
    out: list[int] = []
    for v in values:
        if not out or out[-1] != v:
            out.append(v)
    return out


# -- E4 bucketing -----------------------------------------------------------------------------
def _e4_runs(plan: Plan) -> dict[str, RunSpec]:
    runs = {"none": plan.spec(STATIC_UNBUCKETED, edges="none"),
            "planner": plan.spec(REFERENCE, edges="planner")}
    if plan.serve_pow2:
        runs["pow2"] = plan.spec(REFERENCE, edges="pow2")
    return runs


def _e4_build(plan: Plan, results: dict, env: dict) -> dict:
    from workloads.buckets import evaluate_edges, plan_buckets, powers_of_two_plan
    exp = EXPERIMENTS["E4"]
    rows, configs, observed, cause = [], {}, [], []
    names = {"none": "none", "planner": plan.planner_name, "pow2": "powers of two"}
    edges = {"none": (), "planner": plan.planner_edges, "pow2": plan.pow2_edges}
    lengths = [r.input_length for r in plan.requests]
    for role in ("none", "planner", "pow2"):
        result = results.get(role)
        configs[role] = metrics(result)
        analytic = (evaluate_edges(lengths, edges[role]) if edges[role] else None)
        configs[role]["edges"] = list(edges[role])
        configs[role]["planned_waste_pct"] = analytic.waste_pct if analytic else 0.0
        configs[role]["compiled_graphs"] = (result or {}).get("max_graphs_per_function")
        if role == "pow2" and not plan.serve_pow2:
            # not served: its shapes and padding follow from the lengths and edges alone
            configs[role] = {"served": False, "edges": list(edges[role]),
                             "planned_waste_pct": analytic.waste_pct,
                             "padding_waste_pct": analytic.waste_pct,
                             "compiled_graphs": analytic.distinct_shapes_after}
            note = "not served"
            rows.append([f"{names[role]} (computed)", ",".join(map(str, edges[role])),
                         str(analytic.distinct_shapes_after), note, note, note,
                         f"{analytic.waste_pct:.1f}%", note, note])
            continue
        if _failed_text(result):
            rows.append([names[role], _failed_text(result)] + [fmt.NA] * 7)
            continue
        rows.append([names[role], ",".join(map(str, edges[role])) or "—",
                     str(result["max_graphs_per_function"]), str(result["graphs"]),
                     str(result["recompiles"]), fmt.seconds(result["compile_s"]),
                     fmt.pct(result["padding_waste"]),
                     fmt.spread(result["steady"]["latency_p95_ms"]),
                     fmt.ms(result["cold_start_ms"])])
    planner, pow2, none = results.get("planner"), results.get("pow2"), results.get("none")
    if planner and "steady" in planner:
        ok = planner["max_graphs_per_function"] <= plan.bucket_count
        observed.append(f"{plan.planner_name}: {planner['max_graphs_per_function']} compiled "
                        f"shapes per function ({'≤' if ok else '>'} K={plan.bucket_count}), "
                        f"padding waste {fmt.pct(planner['padding_waste'])}.")
    if pow2 and "steady" in pow2:
        observed.append(f"powers of two: {pow2['max_graphs_per_function']} shapes per function, "
                        f"padding waste {fmt.pct(pow2['padding_waste'])}.")
    elif not plan.serve_pow2:
        observed.append(f"powers of two (computed from the lengths, not served): "
                        f"{configs['pow2']['compiled_graphs']} shapes, padding waste "
                        f"{configs['pow2']['padding_waste_pct']:.1f}%.")
    if none and "steady" in none:
        observed.append(f"no bucketing: {none['max_graphs_per_function']} shapes per function "
                        f"(one per distinct length), {none['recompiles']} recompiles, "
                        f"{fmt.seconds(none['compile_s'])} compiling.")
    if planner and none and "steady" in planner and "steady" in none:
        configs["planner"]["p95_vs_none"] = _vs(planner, none, "latency_p95_ms")
        observed.append(f"warm p95, planner vs none: {configs['planner']['p95_vs_none']['text']} "
                        f"(padding makes the encoder run over pad tokens).")
    whole = list(plan.trace_input_lengths)
    if whole:
        fitted = plan_buckets(whole, plan.bucket_count)
        powers = powers_of_two_plan(whole)
        configs["whole_trace"] = {"requests": len(whole),
                                  "planner_edges": list(fitted.edges),
                                  "planner_waste_pct": fitted.waste_pct,
                                  "pow2_edges": list(powers.edges),
                                  "pow2_waste_pct": powers.waste_pct,
                                  "pow2_shapes": powers.distinct_shapes_after}
        observed.append(f"Over the whole trace ({len(whole)} requests), the planner's "
                        f"K={plan.bucket_count} edges {list(fitted.edges)} would pad "
                        f"{fitted.waste_pct:.1f}% vs powers of two's {powers.waste_pct:.1f}% "
                        f"with {powers.distinct_shapes_after} shapes.")
    cause.append("Each padded width is one compiled graph per function, so bucketing bounds the "
                 "number of compiles by the bucket count instead of by the traffic's distinct "
                 "lengths; the price is compute spent on pad tokens. Powers of two place edges by "
                 "a fixed rule; the planner places its K edges where the lengths are (an exact "
                 "dynamic programme on the replayed lengths), so at the same or a smaller number "
                 "of shapes it pads less. With more shapes than K, powers of two can pad less "
                 "than the planner: the trade is compiles against padding.")
    table = {"columns": ["buckets", "edges", "shapes per function", "graphs", "recompiles",
                         "compile", "padding waste", "warm p95", "cold start"], "rows": rows}
    return _section(exp, plan, configs=configs, table=table, observed=observed,
                    root_cause=cause, K=plan.bucket_count,
                    notes=[n for n in plan.left_out if n.startswith("E4")])


# -- E5 KV cache ------------------------------------------------------------------------------
def _e5_runs(plan: Plan) -> dict[str, RunSpec]:
    runs = {}
    for name, requests in plan.e5_requests.items():
        tokens = requests[0].output_length
        for kv in ("on", "off"):
            runs[f"{name}/{kv}"] = plan.spec(HF_EAGER.with_option("kv_cache", kv),
                                             requests=requests,
                                             requests_name=f"E5-{name}-{tokens}-tokens")
    return runs


def _e5_build(plan: Plan, results: dict, env: dict) -> dict:
    exp = EXPERIMENTS["E5"]
    rows, configs, observed = [], {}, []
    for name, requests in plan.e5_requests.items():
        on, off = results.get(f"{name}/on"), results.get(f"{name}/off")
        tokens = requests[0].output_length
        configs[f"{name}/on"] = {**metrics(on), "output_tokens": tokens}
        configs[f"{name}/off"] = {**metrics(off), "output_tokens": tokens}
        if _failed_text(on) or _failed_text(off):
            rows.append([name, str(tokens), _failed_text(on) or _failed_text(off)] + [fmt.NA] * 5)
            continue
        versus = _vs(on, off)
        configs[f"{name}/on"]["vs_off"] = versus
        rows.append([name, str(tokens), fmt.spread(on["steady"]["latency_p50_ms"]),
                     fmt.spread(off["steady"]["latency_p50_ms"]), versus["text"],
                     fmt.spread(on["steady"]["tpot_ms"]), fmt.spread(off["steady"]["tpot_ms"]),
                     fmt.size(on["kv_cache_peak_bytes"])])
        observed.append(f"{name} outputs ({tokens} tokens): cache on "
                        f"{fmt.ms(_median(on, 'latency_p50_ms'))} vs off "
                        f"{fmt.ms(_median(off, 'latency_p50_ms'))} p50 — {versus['text']}; the "
                        f"cache held {fmt.size(on['kv_cache_peak_bytes'])} at its peak.")
    cause = ["Without a cache, token t re-runs the decoder over all t positions before it, so a "
             "request's decoder work grows with the square of its output length; the cache keeps "
             "each layer's keys and values (2 · layers · heads · d_kv · positions · bytes, for "
             "the output and the encoder's positions) and makes every step one position."]
    verdicts = {name: configs.get(f"{name}/on", {}).get("vs_off", {}).get("verdict")
                for name in plan.e5_requests}
    if verdicts.get("short") in ("within noise", "slower", "noise unknown"):
        cause.append("For short outputs there is little to recompute, and the cache's "
                     "bookkeeping costs about what it saves.")
    if verdicts.get("long") not in (None, "faster"):
        cause.append("Long outputs did not show the gain clearly here: on a model this small "
                     "the recomputed prefix is cheap next to the per-step overhead, and the "
                     "spread of the repeats is as large as the difference.")
    table = {"columns": ["outputs", "tokens", "cache on p50", "cache off p50", "on vs off",
                         "on ms/token", "off ms/token", "cache memory (peak)"], "rows": rows}
    return _section(exp, plan, configs=configs, table=table, observed=observed,
                    root_cause=cause, decode_path="hf-generate, eager")


# -- E6 combined ------------------------------------------------------------------------------
E6_STEPS: tuple[tuple[str, OptConfig], ...] = (
    ("baseline", OptConfig(kv_cache="off")),
    ("+compile", OptConfig(compile="default", kv_cache="off")),
    ("+graph-break removal", OptConfig(compile="default", decode="fullgraph", kv_cache="off")),
    ("+bucketing", OptConfig(compile="default", decode="fullgraph", bucketing="on",
                             kv_cache="off")),
    ("+KV cache", REFERENCE),
    ("+bf16", REFERENCE.with_option("precision", "bf16")),
    ("+int8", REFERENCE.with_option("precision", "bf16").with_option("quant", "int8")),
)


def _e6_runs(plan: Plan) -> dict[str, RunSpec]:
    return {name: plan.spec(options) for name, options in plan.e6_steps}


def _verdict(result: dict | None, previous: dict | None) -> dict:
    if _failed_text(result):
        return {"verdict": "n/a", "text": _failed_text(result)}
    if result.get("notes") and result["options"]["quant"] == "int8" and any(
            "int8" in n for n in result["notes"]):
        return {"verdict": "not supported", "text": "int8 not supported here: " + result["notes"][0]}
    versus = _vs(result, previous)
    stability = _stability(result)
    word = {"faster": "keep", "slower": "drop", "within noise": "no measurable gain",
            "noise unknown": "keep?" if (versus["ratio"] or 1) < 1 else "drop?"}.get(
        versus["verdict"], "n/a")
    if result.get("compile_fallbacks") or result.get("recompile_limit_hits"):
        word = "unstable"
    return {"verdict": word, "text": f"{word}: {versus['text']} than the step before; {stability}",
            "vs_previous": versus, "stability": stability}


def _e6_build(plan: Plan, results: dict, env: dict) -> dict:
    exp = EXPERIMENTS["E6"]
    rows, configs, observed, cause = [], {}, [], []
    previous = None
    baseline = results.get("baseline")
    for name, options in plan.e6_steps:
        result = results.get(name)
        configs[name] = metrics(result)
        verdict = _verdict(result, previous) if previous is not None or name != "baseline" else {
            "verdict": "control", "text": "control"}
        configs[name]["verdict"] = verdict
        if result and "steady" in result and baseline and "steady" in baseline:
            configs[name]["vs_baseline"] = _vs(result, baseline)
        if _failed_text(result):
            rows.append([name, options.label(), _failed_text(result)] + [fmt.NA] * 10)
        else:
            memory = (result.get("weight_bytes") or 0) + (result.get("kv_cache_peak_bytes") or 0)
            configs[name]["memory_bytes"] = memory
            stability = (f"{result['graphs']} graphs, {result['graph_breaks']} breaks, "
                         f"{result['recompiles']} recompiles"
                         + (", limit hit" if result.get("recompile_limit_hits") else "")
                         + (", fell back to eager" if result.get("compile_fallbacks") else ""))
            if options.compile == "off":
                stability = "eager"
            rows.append([name, options.label(), fmt.seconds(result["compile_s"]) if options.compiled else "—",
                         fmt.ms(result["cold_start_ms"]),
                         fmt.spread(result["steady"]["latency_p50_ms"]),
                         fmt.spread(result["steady"]["latency_p95_ms"]),
                         fmt.spread(result["steady"]["tokens_per_s"], lambda v: fmt.num(v, 0)),
                         f"{fmt.size(result.get('weight_bytes'))} + {fmt.size(result['kv_cache_peak_bytes'])} KV",
                         stability,
                         configs[name].get("vs_baseline", {}).get("text", "—") if name != "baseline" else "—",
                         _agreement(result.get("drift")), verdict["text"]])
        if result and "steady" in result:
            previous = result
    last = next((results.get(n) for n, _ in reversed(plan.e6_steps)
                 if results.get(n) and "steady" in results.get(n)), None)
    if baseline and last and "steady" in baseline and last is not baseline:
        observed.append(f"baseline → last step: warm p50 {fmt.ms(_median(baseline, 'latency_p50_ms'))}"
                        f" → {fmt.ms(_median(last, 'latency_p50_ms'))} "
                        f"({_vs(last, baseline)['text']}); tokens/s "
                        f"{fmt.num(_median(baseline, 'tokens_per_s'), 0)} → "
                        f"{fmt.num(_median(last, 'tokens_per_s'), 0)}.")
    for name, _ in plan.e6_steps[1:]:
        observed.append(f"{name}: {configs[name]['verdict']['text']}.")
    hf = results.get("+compile")
    if hf and "steady" in hf and hf.get("graph_breaks"):
        cause.append(f"+compile on hf-generate: {hf['graph_breaks']} graph breaks split each step "
                     "into several graphs (see E2).")
    limited = [name for name in ("+compile", "+graph-break removal", "+bucketing")
               if (results.get(name) or {}).get("recompile_limit_hits")
               or (results.get(name) or {}).get("compile_fallbacks")]
    if "+compile" in limited:
        cause.append("+compile without a KV cache: generate() feeds the decoder the whole prefix, "
                     "one token longer every step — a new shape each step — so the compiled "
                     "frames recompiled until torch._dynamo's recompile limit and then ran eager, "
                     "paying guard checks on top of eager work.")
    fullgraph_limited = [n for n in limited if n != "+compile"]
    if fullgraph_limited:
        cause.append(f"{' and '.join(fullgraph_limited)} without a KV cache: the uncached step "
                     "re-runs the decoder over the whole prefix, whose length grows by one every "
                     "token — a new shape every step. With dynamic shapes off it recompiled until "
                     "the recompile limit, which fullgraph=True makes a hard failure, so the "
                     "engine served that config eager. The KV cache (the next step) is what makes "
                     "the step's shapes static.")
    bf16 = results.get("+bf16")
    if bf16 and "steady" in bf16 and results.get("+KV cache"):
        versus = _vs(bf16, results["+KV cache"])
        cause.append(f"+bf16 halves the weight bytes ({fmt.size(results['+KV cache'].get('weight_bytes'))}"
                     f" → {fmt.size(bf16.get('weight_bytes'))}); latency {versus['text']}: "
                     "at batch 1 a step only gets faster from fewer bytes when it is "
                     "memory-bound (see Roofline).")
    int8 = results.get("+int8")
    if int8 and "steady" in int8:
        notes = [n for n in int8.get("notes", []) if "int8" in n]
        if notes:
            cause.append("+int8: " + notes[0])
        else:
            cause.append(f"+int8 (torchao weight-only) stores weights in "
                         f"{fmt.size(int8.get('weight_bytes'))}; the matmuls dequantize on the "
                         "fly, which only pays off when bytes, not operations, bound the step.")
    table = {"columns": ["step", "config", "compile", "cold start", "warm p50", "warm p95",
                         "tokens/s", "memory (weights + KV)", "compile stability",
                         "vs baseline (p50)", "token agreement", "verdict"], "rows": rows}
    notes = [n for n in plan.left_out if n.startswith("E6")]
    notes.append(f"token agreement: each config's greedy tokens against the {DRIFT_REFERENCE} "
                 f"reference, on 1 request in {EngineSettings.drift_every} (exact match in "
                 f"brackets)")
    if plan.model in PRESETS:
        notes.append(f"drift: {RANDOM_WEIGHTS_CAVEAT}")
    return _section(exp, plan, configs=configs, table=table, observed=observed,
                    root_cause=cause, notes=notes)


def _agreement(drift: dict | None) -> str:
    if not drift:
        return fmt.NA
    return (f"{100 * drift['token_agreement']:.1f}% "
            f"({100 * drift['exact_match']:.0f}% exact, n={drift['sampled_requests']})")


# -- Roofline ---------------------------------------------------------------------------------
ROOFLINE_PRECISIONS: dict[str, OptConfig] = {
    "fp32": REFERENCE,
    "bf16": REFERENCE.with_option("precision", "bf16"),
    "int8": REFERENCE.with_option("precision", "bf16").with_option("quant", "int8"),
}
LEVERS = ("", " +freezing")


def _lever(options: OptConfig, lever: str) -> OptConfig:
    return options.with_option("freezing", "on") if lever == " +freezing" else options


def _roofline_runs(plan: Plan) -> dict[str, RunSpec]:
    runs = {"compiled fullgraph": plan.spec(REFERENCE), "hf eager": plan.spec(HF_EAGER)}
    for precision, options in ROOFLINE_PRECISIONS.items():
        for lever in LEVERS:
            runs[f"{precision}{lever}"] = plan.spec(_lever(options, lever))
    return runs


def _roofline_build(plan: Plan, results: dict, env: dict) -> dict:
    from probe.roofline import classify
    exp = EXPERIMENTS["roofline"]
    roof = env.get("roofline") or {}
    configs: dict = {"machine": roof}
    rows, observed, cause = [], [], []
    step_bytes = (roof.get("step_bytes") or {}).get("total")
    bandwidth = (roof.get("bandwidth") or {}).get("gemv_read_gb_s")
    gflops = roof.get("matmul_gflops")
    if not step_bytes or not bandwidth:
        observed.append("the roofline could not be measured: " + str(roof.get("error", "unknown")))
        return _section(exp, plan, configs=configs, table={"columns": [], "rows": []},
                        observed=observed, root_cause=cause)
    by_precision = roof.get("step_bytes_by_precision") or {"fp32": step_bytes,
                                                           "bf16": step_bytes // 2}
    fp32 = classify(None, step_bytes, bandwidth, gflops)
    configs["roofline_ms_per_token"] = {
        p: classify(None, b, bandwidth, gflops).roofline_ms
        for p, b in by_precision.items() if isinstance(b, int)}
    if fp32.compute_ms is not None:
        rows.append(["compute roofline, fp32", "", fmt.ms(fp32.compute_ms), "",
                     f"2 FLOPs per weight at {gflops:.0f} GFLOP/s (GEMM)"])
    precisions: dict = {}
    for precision, options in ROOFLINE_PRECISIONS.items():
        nbytes = by_precision.get(precision)
        if not isinstance(nbytes, int):
            rows.append([precision, "memory roofline", fmt.NA, "", str(nbytes or "not measured")])
            continue
        roof_ms = configs["roofline_ms_per_token"][precision]
        rows.append([precision, "memory roofline", fmt.ms(roof_ms), "1.00×",
                     f"{fmt.size(nbytes)} ÷ {bandwidth:.1f} GB/s"])
        best = None
        for lever in LEVERS:
            role = f"{precision}{lever}"
            result = results.get(role)
            configs[role] = metrics(result)
            if _failed_text(result):
                rows.append([precision, f"compiled{lever}", _failed_text(result), "", ""])
                continue
            measured = _spread(result, "tpot_ms")
            ratio = measured.median / roof_ms if measured.median else None
            configs[role].update({"ms_per_token": measured.as_dict(),
                                  "ratio_to_roofline": ratio})
            rows.append([precision, f"compiled{lever}", fmt.spread(measured), fmt.ratio(ratio),
                         _lever(options, lever).label()])
            if ratio and (best is None or ratio < best[1]):
                best = (role, ratio, measured.median)
        if best:
            precisions[precision] = {"roofline_ms": roof_ms, "compiled_ms": best[2],
                                     "ratio": best[1], "config": best[0]}
            observed.append(f"{precision}: best compiled step {fmt.ms(best[2])}/token "
                            f"({best[0]}) = {best[1]:.2f}× its memory roofline "
                            f"({fmt.ms(roof_ms)}).")
    configs["precisions"] = precisions
    for role in ("compiled fullgraph", "hf eager"):
        result = results.get(role)
        configs[role] = metrics(result)
        measured = _spread(result, "tpot_ms")
        verdict = classify(measured.median, step_bytes, bandwidth, gflops)
        configs[role]["ms_per_token"] = measured.as_dict()
        configs[role]["ratio_to_roofline"] = verdict.ratio
        configs[role]["bound"] = verdict.bound
        configs[role]["explanation"] = verdict.explanation
    eager = configs.get("hf eager", {})
    if eager.get("ratio_to_roofline"):
        rows.append(["fp32", "HF eager generate", fmt.spread(_spread(results.get("hf eager"),
                                                                     "tpot_ms")),
                     fmt.ratio(eager["ratio_to_roofline"]), "the baseline"])
        observed.append(f"HF eager generate: {fmt.ms(eager['ms_per_token']['median'])}/token = "
                        f"{eager['ratio_to_roofline']:.1f}× the fp32 roofline.")
    drift = machine_drift(*(results.get(role) for role in results))
    configs["machine_drift"] = drift
    if drift and drift > DRIFT_TOLERANCE:
        observed.append(f"Careful: the machine's own speed moved {drift:.2f}× during these "
                        f"runs (calibration), so their ratios to the roofline are that uncertain.")
    compiled = configs.get("compiled fullgraph", {})
    if compiled.get("explanation"):
        cause.append(f"compiled fp32 step: {compiled['explanation']}.")
        configs["bound"] = compiled.get("bound")
    sb = roof.get("step_bytes", {})
    cause.append(f"Bytes per step: decoder layers {fmt.size(sb.get('decoder_layers'))} + lm_head "
                 f"{fmt.size(sb.get('lm_head'))} (the tied embedding, read once); the "
                 f"cross-attention k/v projections ({fmt.size(sb.get('cross_kv_skipped'))}) run "
                 f"once per request and are cached, so they are not counted. Each precision's "
                 f"bytes are measured on a converted copy of the model (int8: torchao's tensors "
                 f"with their scales).")
    cause.append("freezing (inductor's `freezing=True`) turns weights into constants, which lets "
                 "inductor fold them and use the CPU's prepacked GEMM kernels (oneDNN; bf16 on "
                 "CPUs with AMX): the lever that moves half precision here.")
    table = {"columns": ["precision", "path", "ms/token", "× its roofline", "config / how"],
             "rows": rows}
    return _section(exp, plan, configs=configs, table=table, observed=observed,
                    root_cause=cause)


# -- Observer cost ----------------------------------------------------------------------------
def _observer_runs(plan: Plan) -> dict[str, RunSpec]:
    return {"probed": plan.spec(REFERENCE)}


def _observer_build(plan: Plan, results: dict, env: dict) -> dict:
    exp = EXPERIMENTS["observer"]
    result = results.get("probed")
    observer = (result or {}).get("observer")
    configs = {"probed": metrics(result)}
    rows, observed, cause = [], [], []
    if not observer:
        observed.append(_failed_text(result) or "the observer passes did not run")
    else:
        configs["probed"]["observer"] = observer
        rows.append(["probes on", fmt.spread(observer["probes_on_tokens_per_s"],
                                             lambda v: fmt.num(v, 1))])
        rows.append(["probes off", fmt.spread(observer["probes_off_tokens_per_s"],
                                              lambda v: fmt.num(v, 1))])
        overhead = observer.get("overhead_fraction")
        observed.append(f"warm tokens/s with the probes on vs off: {observer['comparison']}"
                        + (f" (overhead {fmt.pct(overhead)} by the medians)" if overhead is not None else "")
                        + f", over {len(observer['order'])} alternating passes.")
        if observer.get("bookkeeping_us_per_request") is not None:
            rows.append(["per-request probe bookkeeping, timed alone",
                         f"{observer['bookkeeping_us_per_request']:.1f} µs "
                         f"({fmt.pct(observer.get('bookkeeping_fraction'))} of a warm request)"])
            observed.append(f"the probe's per-request bookkeeping, timed on its own: "
                            f"{observer['bookkeeping_us_per_request']:.1f} µs, "
                            f"{fmt.pct(observer.get('bookkeeping_fraction'))} of a warm request.")
        mechanism = ("The compile probe is dynamo callbacks and logging handlers: they run when "
                     "dynamo compiles, not when compiled code runs. In steady state what is left "
                     "is the engine's per-request bookkeeping (reading compile metrics and break "
                     "counts once per request).")
        share = observer.get("bookkeeping_fraction")
        if observer["verdict"] in ("within noise", "faster"):
            cause.append(mechanism + " The throughput passes cannot tell it from noise.")
        elif share is not None and share < 0.01 and (overhead or 0) > 0.02:
            cause.append(mechanism + f" Timed alone it is {fmt.pct(share)} of a request, so the "
                                     f"{fmt.pct(overhead)} the throughput passes show is not the "
                                     "probe: it is the spread of short passes on a shared "
                                     "machine.")
        else:
            cause.append(mechanism + f" Here it measured {observer['comparison']}.")
    table = {"columns": ["state", "warm tokens/s (median, range)"], "rows": rows}
    return _section(exp, plan, configs=configs, table=table, observed=observed,
                    root_cause=cause)


EXPERIMENTS: dict[str, Experiment] = {
    "E1": Experiment(
        "E1", "Compile modes",
        hypothesis="torch.compile cuts warm per-request latency, at a compile cost paid by the "
                   "first request of every new shape.",
        variable="compile: off, default, reduce-overhead, max-autotune",
        control="compile=off (the same fullgraph decode loop, eager)",
        expected="compiled modes faster warm, much slower cold; reduce-overhead helps only "
                 "where CUDA graphs exist; max-autotune compiles longest for a small further gain.",
        runs=_e1_runs, build=_e1_build),
    "E2": Experiment(
        "E2", "Graph breaks",
        hypothesis="Compiling HF generate() leaves graph breaks that keep it from the speed of a "
                   "break-free decode loop.",
        variable="decode path under compile=default: hf-generate vs fullgraph",
        control="decode=hf-generate (how most teams start)",
        expected="hf-generate: many graphs and breaks (.item(), data-dependent stopping); "
                 "fullgraph: one graph per compiled function, 0 breaks, faster warm.",
        runs=_e2_runs, build=_e2_build),
    "E3": Experiment(
        "E3", "Dynamic shapes",
        hypothesis="With static shapes every new input length recompiles; dynamic shapes compile "
                   "once.",
        variable="dynamic: off vs on (no bucketing, so every distinct length is a new shape)",
        control="dynamic=off",
        expected="recompiles grow with distinct lengths when off; roughly constant when on.",
        runs=_e3_runs, build=_e3_build),
    "E4": Experiment(
        "E4", "Bucketing",
        hypothesis="Padding inputs to K planned buckets bounds the compiled graphs at K with less "
                   "padding than powers of two.",
        variable="bucket set: none, the planner's K buckets, powers of two",
        control="no bucketing",
        expected="planner: ≤ K shapes per function and less padding waste than powers of two; "
                 "none: one shape per distinct length, no waste.",
        runs=_e4_runs, build=_e4_build),
    "E5": Experiment(
        "E5", "KV cache",
        hypothesis="The KV cache makes per-token cost flat; without it cost grows with output "
                   "length.",
        variable="kv_cache: on vs off, for short, medium and long outputs (HF generate, eager)",
        control="kv_cache=on",
        expected="little difference for short outputs, cache on clearly faster for long ones, "
                 "at the cost of cache memory.",
        runs=_e5_runs, build=_e5_build,
        groups=lambda plan: [(f"{name}/on", f"{name}/off") for name in plan.e5_requests]),
    "E6": Experiment(
        "E6", "Combined",
        hypothesis="The optimizations stack: each step keeps or improves latency, memory and "
                   "compile stability.",
        variable="one more optimization per step: baseline → +compile → +graph-break removal → "
                 "+bucketing → +KV cache → +bf16 → +int8",
        control="baseline: HF generate, eager, no KV cache, fp32",
        expected="each step faster or leaner than the last; the final table says which to keep.",
        runs=_e6_runs, build=_e6_build),
    "roofline": Experiment(
        "roofline", "Roofline",
        hypothesis="At batch 1 a decode step reads every decoder weight once per token, so "
                   "weight bytes ÷ memory bandwidth is its floor; a compiled step should "
                   "approach it.",
        variable="decode path (HF eager generate, compiled fullgraph) against the floor",
        control="the memory roofline, from this machine's measured bandwidth",
        expected="compiled within a small factor of the roofline; eager further away.",
        runs=_roofline_runs, build=_roofline_build),
    "observer": Experiment(
        "observer", "Observer cost",
        hypothesis="The probes cost nothing measurable in steady state.",
        variable="compile probe installed vs uninstalled (no callbacks, no log handlers, no "
                 "per-request bookkeeping)",
        control="probes off",
        expected="warm throughput within noise.",
        runs=_observer_runs, build=_observer_build,
        extras={"probed": frozenset({EXTRA_OBSERVER})}),
}
