"""E1 — compile modes: off / default / reduce-overhead / max-autotune on the reference config,
with how many requests of this traffic repay each compile."""

from __future__ import annotations

import math

from probe.analysis.stats import MIN_BREAK_EVEN_REQUESTS, break_even
from probe.bench.experiments.base import (
    EAGER_FULLGRAPH,
    REFERENCE,
    Experiment,
    Results,
    Template,
    compiled_text,
    served,
    warm_row,
)
from probe.common.units import NO_DATA, fmt_ms, fmt_s
from probe.runs.cold_start import ColdStartFigures, measure_pair
from probe.runs.plan import Plan, RunSpec
from probe.runs.results import Outcome, RunResult, section_figures
from probe.runs.runs import Extra, RunContext, RunHooks
from probe.runs.spread import fmt_spread
from probe.runs.verdict import usable, versus

TEMPLATE = Template(
    "E1", "Compile modes",
    hypothesis="torch.compile cuts warm per-request latency, at a compile cost paid by the "
               "first request of every new shape.",
    variable="compile: off, default, reduce-overhead, max-autotune",
    control="compile=off (the same fullgraph decode loop, eager)",
    expected="compiled modes faster warm, much slower cold; reduce-overhead helps only "
             "where CUDA graphs exist; max-autotune compiles longest for a small further gain.")


def measure_cold_start(engine, spec: RunSpec, context: RunContext,
                       hooks: RunHooks) -> ColdStartFigures:
    """The run's config with compile_cache=on, started twice in fresh processes on the run's
    first request: from scratch, then from the cache the first start left."""
    import torch
    options = spec.options.with_option("compile_cache", "on")
    text = " ".join(f"{key}={value}" for key, value in options.as_dict().items())
    first = spec.requests[0]
    hooks.on_request("cold start, 2 fresh processes", 0, 1)
    try:
        figures = measure_pair(context.model, text, input_length=first.input_length,
                               output_length=first.output_length,
                               threads=torch.get_num_threads(), backend=context.compile_backend,
                               edges=spec.edges)
    except Exception as exc:  # the pair is one figure of the section, never the whole run
        figures = ColdStartFigures.failed(options.label(), f"{type(exc).__name__}: {exc}"[:300])
    hooks.on_request("cold start, 2 fresh processes", 1, 1)
    return figures


# two processes, the first compiling the run's three functions at one shape from nothing
COLD_START = Extra("cold_start", measure_cold_start, processes=2, compiles=3)


def cold_start_parts(result: Outcome) -> tuple[dict | None, list[str], dict | None]:
    """(report.json's `cold_start`, the observed line, the extra table) from the pair."""
    figures = result.cold_start if isinstance(result, RunResult) else None
    if figures is None:
        return None, [], None
    if figures.error:
        return figures.as_dict(), [f"Cold start from the compile cache: not measured "
                                   f"({figures.error})."], None
    ratio = figures.ratio
    line = (f"Cold start in a fresh process, {figures.options}: {fmt_ms(figures.scratch_ms)} "
            f"from scratch (compile {fmt_s(figures.scratch_compile_s)}), "
            f"{fmt_ms(figures.cache_ms)} from the compile cache (loading "
            f"{fmt_s(figures.cache_compile_s)}; {figures.loaded} functions loaded, "
            f"{figures.compiled_on_restart} compiled, {figures.traced_on_restart} graphs traced "
            f"by dynamo): "
            + (f"{ratio:.1%} of the full compile" if ratio is not None else NO_DATA)
            + ("; same tokens" if figures.tokens_equal else "; TOKENS DIFFER") + ".")
    table = {"title": "Cold start: fresh process, from scratch and from the compile cache",
             "columns": ["start", "first request", "compile or load", "process wall",
                         "from cache"],
             "rows": [["from scratch", fmt_ms(figures.scratch_ms),
                       fmt_s(figures.scratch_compile_s), fmt_s(figures.scratch_process_s), "—"],
                      ["from the cache", fmt_ms(figures.cache_ms),
                       fmt_s(figures.cache_compile_s), fmt_s(figures.cache_process_s),
                       f"{figures.loaded} loaded, {figures.compiled_on_restart} compiled"],
                      ["ratio", f"{ratio:.1%}" if ratio is not None else NO_DATA, "", "", ""]]}
    return figures.as_dict(), [line], table


def compile_modes(plan: Plan) -> tuple[str, ...]:
    """--quick: no max-autotune, and on a CPU no reduce-overhead (CUDA graphs need a GPU)."""
    if not plan.quick:
        return ("default", "reduce-overhead", "max-autotune")
    return ("default", "reduce-overhead") if plan.device.startswith("cuda") else ("default",)


def left_out(plan: Plan) -> tuple[str, ...]:
    modes, it = ("", "it") if plan.device.startswith("cuda") else (
        " and, on a CPU, reduce-overhead (what it adds over default is CUDA graphs, which need "
        "a GPU)", "them")
    return (f"E1: --quick leaves out max-autotune (its kernel autotuning is the longest "
            f"compile){modes}; run without --quick to include {it}",
            "E1: --quick leaves out the cold start from the compile cache (two more fresh "
            "processes, each starting the compiled config: about a minute here); run without "
            "--quick to measure it") if plan.quick else ()


def runs(plan: Plan) -> dict[str, RunSpec]:
    specs = {"off": plan.spec(EAGER_FULLGRAPH)}
    for mode in compile_modes(plan):
        specs[mode] = plan.spec(REFERENCE.with_option("compile", mode))
    return specs


def break_even_requests(compiled: RunResult, eager: RunResult) -> int | str | None:
    """Requests of this traffic that repay the compile (probe.analysis.stats.break_even over the warm
    passes of both runs): a whole number, "never" when compiled is not faster, None when
    either side served too few requests to tell."""
    found = break_even(compiled.compile_s, compiled.steady_records, eager.steady_records)
    if found is None or found.requests is None:
        return None
    return "never" if math.isinf(found.requests) else math.ceil(found.requests)


NO_GAIN = "no measured gain"     # the repeats' ranges overlap: no saving to repay it with


def judged_break_even(verdict: str, requests: int | str | None) -> int | str | None:
    """The break-even as the verdict against eager allows it, so the two never disagree: a
    count only where compiled is faster (or a single repeat could not say); "never" where it is
    slower; NO_GAIN where the repeats say within noise (a median saving inside the noise repays
    nothing one can count on)."""
    if verdict == "slower":
        return "never"
    if verdict == "within noise" and requests is not None:
        return NO_GAIN
    return requests


def break_even_text(requests: int | str | None) -> str:
    if isinstance(requests, int):
        return f"{requests:,} requests"
    return {None: f"{NO_DATA} (needs {MIN_BREAK_EVEN_REQUESTS} warm requests a side)",
            "never": "never (not faster)", NO_GAIN: "none (not measurably faster)"}[requests]


def repaid_text(requests: int | str | None) -> str:
    if isinstance(requests, int):
        return f"the compile is repaid after {requests:,} requests of this traffic"
    return {None: "break-even not measured (too few warm requests)",
            "never": "the compile is never repaid (compiled is not faster)",
            NO_GAIN: "the compile is not repaid (compiled is not measurably faster)"}[requests]


def build(plan: Plan, results: Results, env: dict) -> dict:
    off = results.get("off")
    eager = usable(off)
    rows: list[list[str]] = []
    configs: dict[str, dict] = {}
    observed: list[str] = []
    cause: list[str] = []
    for role in ["off", *compile_modes(plan)]:
        result = results.get(role)
        configs[role] = section_figures(result)
        compile_cell = graphs = repaid = NO_DATA
        run = usable(result)
        if not isinstance(run, str):
            compile_cell = "—" if role == "off" else fmt_s(run.compile_s)
            graphs = str(run.graphs)
        if role == "off":
            repaid = "—"
        elif served(result):
            configs[role]["vs_off"] = versus(result, off).as_dict()
            if not isinstance(run, str) and not isinstance(eager, str):
                configs[role]["break_even_requests"] = judged_break_even(
                    configs[role]["vs_off"]["verdict"], break_even_requests(run, eager))
                repaid = break_even_text(configs[role]["break_even_requests"])
        vs = configs[role].get("vs_off", {}).get("text", "control" if role == "off" else NO_DATA)
        rows.append([f"compile={role}", compile_cell, graphs, *warm_row(result), vs, repaid])
    eager_p50 = off.steady.latency_p50_ms.median if served(off) else None
    for mode in compile_modes(plan):
        run = usable(results.get(mode))
        if isinstance(run, str):
            observed.append(f"compile={mode}: {run}.")
            continue
        cold_ratio = (run.cold_start_ms / off.cold_start_ms
                      if served(off) and off.cold_start_ms and run.cold_start_ms is not None
                      else None)
        observed.append(
            f"compile={mode}: {compiled_text(run)}; the first request took "
            f"{fmt_ms(run.cold_start_ms)}"
            + (f" ({cold_ratio:.0f}× eager's first request)" if cold_ratio else "")
            + f"; warm p50 {fmt_spread(run.steady.latency_p50_ms)} vs "
              f"{fmt_ms(eager_p50)} eager: {configs[mode]['vs_off']['text']}"
            + (f"; {repaid_text(configs[mode]['break_even_requests'])}"
               if "break_even_requests" in configs[mode] else "") + ".")
    default = results.get("default")
    if served(default):
        for other in ("reduce-overhead", "max-autotune"):
            result = results.get(other)
            if other in compile_modes(plan) and served(result):
                against = versus(result, default)
                configs[other]["vs_default"] = against.as_dict()
                extra = result.compile_s - default.compile_s
                observed.append(f"{other} vs default: warm p50 {against.text}; compile "
                                f"{'+' if extra >= 0 else '−'}{fmt_s(abs(extra))}.")
        cause.append(_default_cause(configs["default"].get("vs_off", {}), default,
                                    configs["default"].get("break_even_requests")))
    if "reduce-overhead" in compile_modes(plan):
        if env.get("device", "cpu").startswith("cuda"):
            cause.append("reduce-overhead records the compiled step as a CUDA graph and replays "
                         "it, removing per-kernel launch cost — the part of a small model's "
                         "step that fusion alone leaves.")
        else:
            cause.append("reduce-overhead adds CUDA graphs on top of default; a CPU has none, so "
                         "it compiles the same kernels and any difference from default is noise "
                         "or compile-time variance.")
    if "max-autotune" in compile_modes(plan):
        cause.append("max-autotune benchmarks candidate kernels (GEMM templates, tile sizes) "
                     "while compiling: it pays more compile time for kernels that help only "
                     "when the matrix products dominate the step.")
    cause.append("Break-even: compile seconds ÷ the time each request saves against eager "
                 "(per-token saving over the warm passes × the mean output length; "
                 "probe.analysis.stats.break_even, the dashboard's own figure). A deployment that serves "
                 "fewer requests of this traffic per compile loses time by compiling.")
    table = {"columns": ["config", "compile", "graphs", "cold start", "warm p50", "warm p95",
                         "ms/token", "tokens/s", "warm p50 vs off", "break-even"], "rows": rows}
    cold_start, cold_line, cold_table = cold_start_parts(default)
    observed += cold_line
    if cold_start is not None:
        cause.append("From the cache a restart skips dynamo's tracing, AOTAutograd and "
                     "inductor (dynamo's aot_compile artifacts, loaded with "
                     "torch.compiler.load_compiled_function); what is left is reading them, "
                     "loading the kernels' shared objects and checking the guards.")
    return TEMPLATE.section(configs=configs, table=table, observed=observed, root_cause=cause,
                            notes=list(left_out(plan)), cold_start=cold_start,
                            extra_tables=[cold_table] if cold_table else [])


def _default_cause(gain: dict, default: RunResult, repaid: int | str | None) -> str:
    """Why, from the judged break-even (judged_break_even): a count means a measured gain."""
    if isinstance(repaid, int) or (repaid is None and gain.get("verdict") == "faster"):
        return ("Compiling fuses the decode step's many small operations into a few kernels; at "
                "batch 1 the eager step's time is mostly per-operation overhead (see Roofline), "
                "which fusion removes. The price is paid before the first token of every new "
                f"shape: {fmt_s(default.compile_s)} here.")
    return (f"Compiling did not measurably speed the warm step here "
            f"({gain.get('text', NO_DATA)}); its compile time "
            f"({fmt_s(default.compile_s)}) is pure cost at this size.")


def extras(plan: Plan) -> dict[str, frozenset[Extra]]:
    return {} if plan.quick else {"default": frozenset({COLD_START})}


def pairs(plan: Plan) -> list[tuple[str, str]]:
    """Every mode against eager; the other modes against default too."""
    modes = compile_modes(plan)
    return ([(mode, "off") for mode in modes]
            + [(mode, "default") for mode in modes if mode != "default"])


EXPERIMENT = Experiment(TEMPLATE, runs, build, extras=extras, left_out=left_out, pairs=pairs,
                        figures=lambda charts: [charts.timeline, charts.cdf])
