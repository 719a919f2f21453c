"""Roofline: each precision's compiled decode step (as it is, with inductor's freezing, with
inductor's own batch-1 matmuls) and HF eager generate against this machine's memory roofline for
that precision."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING, Mapping

from probe.bench.experiments.base import (
    HF_EAGER,
    LEAN_STEP,
    REFERENCE,
    REFERENCE_BF16,
    REFERENCE_INT8,
    Experiment,
    Results,
    Template,
    settings_text,
    with_settings,
)
from probe.common.units import NO_DATA, fmt_bytes, fmt_ms, fmt_ratio
from probe.contract.options import OptConfig
from probe.report_charts.canvas import Caption, Chart, bar_style, finish, log_scale, new_figure
from probe.runs.plan import BenchRequest, Plan, RunSpec
from probe.runs.results import section_figures, steady_spread
from probe.runs.spread import fmt_spread
from probe.runs.verdict import DRIFT_TOLERANCE, machine_drift, usable, versus
from workloads.buckets import bucket_for

if TYPE_CHECKING:
    import torch

    from probe.engine.model.loading import LoadedModel

TEMPLATE = Template(
    "roofline", "Roofline",
    hypothesis="At batch 1 a decode step reads every decoder weight once per token, so "
               "weight bytes ÷ memory bandwidth is its floor; a compiled step should "
               "approach it.",
    variable="decode path (HF eager generate, compiled fullgraph) against the floor",
    control="the memory roofline, from this machine's measured bandwidth",
    expected="compiled within a small factor of the roofline; eager further away.")
PRECISIONS: dict[str, OptConfig] = {
    "fp32": REFERENCE,
    "bf16": REFERENCE_BF16,
    "int8": REFERENCE_INT8,
}


@dataclass(frozen=True)
class Lever:
    """Options of our own (probe/contract/options.py), so the dashboard shows each too."""
    settings: tuple[tuple[str, str], ...]   # (option, value) pairs
    what: str                               # the report's line about it


# By the suffix of the run's role ("bf16 +gemv"); "" is the precision as it is.
LEVERS: dict[str, Lever] = {
    "": Lever((), "the precision as it is"),
    " +freezing": Lever((("freezing", "on"),),
                        "freezing (weights become constants inductor folds; oneDNN's "
                        "prepacked GEMMs)"),
    " +gemv": Lever((("gemv", "inductor"),),
                    "gemv=inductor (each batch-1 decoder matmul becomes inductor's own "
                    "multiply-and-sum)"),
    " +wrapper": Lever((("wrapper", "cpp"),),
                       "wrapper=cpp (inductor launches the step's kernels from C++, not Python)"),
    " +guards": Lever((("guards", "lean"),),
                      "guards=lean (dynamo checks only the inputs' guards before each step)"),
    " +attention": Lever((("attention", "inductor"),),
                         "attention=inductor (the step's one-query attention as a reduction "
                         "inductor fuses, not an SDPA call per layer)"),
    " +lean step": Lever(LEAN_STEP, f"the lean step ({settings_text(LEAN_STEP)}: every per-step "
                                    f"overhead lever, the library's matmuls kept)"),
    " +all": Lever((("gemv", "inductor"), *LEAN_STEP),
                   "the lean step with gemv=inductor as well"),
}
BASELINES = ("compiled fullgraph", "hf eager")


def lever(options: OptConfig, name: str) -> OptConfig:
    return with_settings(options, LEVERS[name].settings)


def levers_for(plan: Plan, precision: str) -> tuple[str, ...]:
    """The levers tried on one precision: every one on every precision; without the grid
    (`--quick`) none, and fp32 alone (each is one more cold compile)."""
    if plan.quick:
        return ("",) if precision == "fp32" else ()
    return tuple(LEVERS)


def grid_requests(plan: Plan) -> tuple[tuple[BenchRequest, ...], str]:
    """What the grid serves: the replayed requests of the planner's fullest bucket (a lever
    changes the decode step, which those requests all run at one input shape; every further
    bucket is three more graphs to compile per config, 24 configs in the grid). `--quick`'s one
    run stays the replayed list it shares with E1."""
    edges = plan.planner_edges
    if plan.quick or not edges:
        return plan.requests, "replayed"
    counts = Counter(bucket_for(r.input_length, edges) for r in plan.requests)
    fullest = max(counts, key=lambda bucket: (counts[bucket], -bucket))
    return (tuple(r for r in plan.requests if bucket_for(r.input_length, edges) == fullest),
            f"bucket-{fullest}")


def runs(plan: Plan) -> dict[str, RunSpec]:
    specs = {"compiled fullgraph": plan.spec(REFERENCE), "hf eager": plan.spec(HF_EAGER)}
    requests, name_of_list = grid_requests(plan)
    for precision, options in PRECISIONS.items():
        for name in levers_for(plan, precision):
            specs[f"{precision}{name}"] = plan.spec(lever(options, name), requests=requests,
                                                    requests_name=name_of_list)
    return specs


def grid_note(plan: Plan) -> list[str]:
    requests, name_of_list = grid_requests(plan)
    if name_of_list == "replayed":
        return []
    longest = max(r.input_length for r in requests)
    return [f"Each precision and lever is measured on the {len(requests)} of the "
            f"{len(plan.requests)} replayed requests that share the planner's fullest bucket "
            f"(inputs up to {longest} tokens, padded to "
            f"{bucket_for(longest, plan.planner_edges)}): one "
            f"input shape, three graphs to compile per config instead of one set per bucket. "
            f"The baselines (compiled fullgraph, HF eager) serve the whole list."]


def measure_machine(loaded: LoadedModel, device: torch.device) -> dict:
    """Bytes one decode step reads (per precision); the read bandwidth re-reading the fp32
    step's working set (the roofline's, as the dashboard measures it) and DRAM's beside it;
    GEMM throughput."""
    from probe.engine.matmul_chain import matmul_chain_by_precision
    from probe.engine.measure.step_roofline import (
        decode_step_bytes,
        measure_bandwidth,
        measure_matmul_gflops,
        working_set_bandwidth,
    )
    from probe.engine.precision_copies import precision_copies, step_bytes_by_precision
    try:
        step = decode_step_bytes(loaded.model, kv_cache=True)
        bandwidth = working_set_bandwidth(device, step.total)
        dram = measure_bandwidth(device)
        gflops = measure_matmul_gflops(device)
        copies = precision_copies(loaded.model)
    except Exception as exc:  # a failed measurement is reported, not fatal
        return {"error": f"{type(exc).__name__}: {exc}"}
    return {"step_bytes": step.as_dict(), "bandwidth": bandwidth.as_dict(),
            "dram_bandwidth": dram.as_dict(), "matmul_gflops": gflops,
            "step_bytes_by_precision": step_bytes_by_precision(loaded.model, copies),
            "matmul_chain_ms": matmul_chain_by_precision(copies)}


def _memory_level(roof: dict) -> str:
    """Where the step's weights are re-read from: the last-level cache when they fit in it."""
    measured = roof.get("bandwidth") or {}
    l3, size = measured.get("l3_bytes"), measured.get("buffer_bytes")
    if not l3 or not size:
        return ""
    return f" (re-read from the {fmt_bytes(l3)} L3)" if size <= l3 else " (re-read from DRAM)"


def build(plan: Plan, results: Results, env: dict) -> dict:
    from probe.engine.measure.step_roofline import classify
    roof = env.get("roofline") or {}
    configs: dict = {"machine": roof}
    rows: list[list[str]] = []
    observed: list[str] = []
    cause: list[str] = []
    step_bytes = (roof.get("step_bytes") or {}).get("total")
    bandwidth = (roof.get("bandwidth") or {}).get("read_gb_s")
    gflops = roof.get("matmul_gflops")
    if not step_bytes or not bandwidth:
        observed.append("the roofline could not be measured: " + str(roof.get("error", "unknown")))
        return TEMPLATE.section(configs=configs, table={"columns": [], "rows": []},
                                observed=observed, root_cause=cause)
    by_precision = roof.get("step_bytes_by_precision") or {"fp32": step_bytes,
                                                           "bf16": step_bytes // 2}
    fp32 = classify(None, step_bytes, bandwidth, gflops)
    configs["roofline_ms_per_token"] = {
        p: classify(None, b, bandwidth, gflops).roofline_ms
        for p, b in by_precision.items() if isinstance(b, int)}
    if fp32.compute_ms is not None:
        rows.append(["compute roofline, fp32", "", fmt_ms(fp32.compute_ms), "",
                     f"2 FLOPs per weight at {gflops:.0f} GFLOP/s (GEMM)"])
    where = _memory_level(roof)
    precisions: dict = {}
    for precision, options in PRECISIONS.items():
        nbytes = by_precision.get(precision)
        if not isinstance(nbytes, int):
            rows.append([precision, "memory roofline", NO_DATA, "", str(nbytes or "not measured")])
            continue
        roof_ms = configs["roofline_ms_per_token"][precision]
        rows.append([precision, "memory roofline", fmt_ms(roof_ms), "1.00×",
                     f"{fmt_bytes(nbytes)} ÷ {bandwidth:.1f} GB/s{where}"])
        chain = (roof.get("matmul_chain_ms") or {}).get(precision)
        if isinstance(chain, float):
            rows.append([precision, "its matmuls alone", fmt_ms(chain),
                         fmt_ratio(chain / roof_ms), "the step's weight matrices back to back "
                         "through the library's kernel, no graph (best of 30)"])
        best: tuple[str, float, float] | None = None     # (role, ratio, ms per token)
        for name in levers_for(plan, precision):
            role = f"{precision}{name}"
            configs[role] = section_figures(results.get(role))
            result = usable(results.get(role))
            if isinstance(result, str):
                rows.append([precision, f"compiled{name}", result, "", ""])
                continue
            measured = result.steady.tpot_ms
            median = measured.median
            ratio = median / roof_ms if median else None
            configs[role].update({"ms_per_token": measured.as_dict(),
                                  "ratio_to_roofline": ratio})
            rows.append([precision, f"compiled{name}", fmt_spread(measured), fmt_ratio(ratio),
                         lever(options, name).label()])
            if median and ratio and (best is None or ratio < best[1]):
                best = (role, ratio, median)
        if best:
            precisions[precision] = {"roofline_ms": roof_ms, "compiled_ms": best[2],
                                     "ratio": best[1], "config": best[0]}
            observed.append(f"{precision}: best compiled step {fmt_ms(best[2])}/token "
                            f"({best[0]}) = {fmt_ratio(best[1])} its memory roofline "
                            f"({fmt_ms(roof_ms)}).")
            if isinstance(chain, float):
                precisions[precision]["matmul_chain_ms"] = chain
                cause.append(gap_split(precision, roof_ms, chain, best[2]))
    configs["precisions"] = precisions
    for role in BASELINES:
        measured = steady_spread(results.get(role), "tpot_ms")
        verdict = classify(measured.median, step_bytes, bandwidth, gflops)
        configs[role] = {**section_figures(results.get(role)),
                         "ms_per_token": measured.as_dict(), "ratio_to_roofline": verdict.ratio,
                         "bound": verdict.bound, "explanation": verdict.explanation}
    eager = configs["hf eager"]
    if eager["ratio_to_roofline"]:
        rows.append(["fp32", "HF eager generate",
                     fmt_spread(steady_spread(results.get("hf eager"), "tpot_ms")),
                     fmt_ratio(eager["ratio_to_roofline"]), "the baseline"])
        observed.append(f"HF eager generate: {fmt_ms(eager['ms_per_token']['median'])}/token = "
                        f"{fmt_ratio(eager['ratio_to_roofline'])} the fp32 roofline.")
    drift = machine_drift(*results.values())
    configs["machine_drift"] = drift
    if drift and drift > DRIFT_TOLERANCE:
        observed.append(f"Careful: the machine's own speed moved {drift:.2f}× during these "
                        f"runs (calibration), so their ratios to the roofline are that uncertain.")
    below = [name for name, row in configs.get("precisions", {}).items()
             if row.get("ratio") is not None and row["ratio"] < 1]
    if below:     # nothing reads its weights faster than memory delivers them
        observed.append(f"Not a measurement: {', '.join(below)} ran faster than its memory "
                        f"roofline, so the bandwidth was under-measured (the machine was busy "
                        f"while it was timed); rerun on a quiet machine.")
    dram = (roof.get("dram_bandwidth") or {}).get("read_gb_s")
    if dram:
        cause.append(f"The roofline's bandwidth ({bandwidth:.1f} GB/s) is measured re-reading "
                     f"a buffer the size of the fp32 step ({fmt_bytes(step_bytes)}), as the "
                     f"step re-reads its weights every token; DRAM, on a buffer many times the "
                     f"last-level cache ({fmt_bytes(roof['bandwidth'].get('l3_bytes'))}), gives "
                     f"{dram:.1f} GB/s. Held against DRAM instead, the fp32 roofline would be "
                     f"{fmt_ms(step_bytes / (dram * 1e9) * 1e3)}: a floor the step can beat "
                     f"when its weights stay in the cache.")
    compiled = configs["compiled fullgraph"]
    if compiled.get("explanation"):
        cause.append(f"compiled fp32 step: {compiled['explanation']}.")
        configs["bound"] = compiled.get("bound")
    sb = roof.get("step_bytes", {})
    cause.append(f"Bytes per step: decoder layers {fmt_bytes(sb.get('decoder_layers'))} + lm_head "
                 f"{fmt_bytes(sb.get('lm_head'))} (the tied embedding, read once); the "
                 f"cross-attention k/v projections ({fmt_bytes(sb.get('cross_kv_skipped'))}) run "
                 f"once per request and are cached, so they are not counted. Each precision's "
                 f"bytes are measured on a converted copy of the model (int8: torchao's tensors "
                 f"with their scales).")
    cause += lever_effects(plan, results)
    cause.append("With batching on, a step reads the weights once for every row plus each "
                 "row's own KV cache: E7 holds each batching mode's step against that batch "
                 "roofline.")
    table = {"columns": ["precision", "path", "ms/token", "× its roofline", "config / how"],
             "rows": rows}
    return TEMPLATE.section(configs=configs, table=table, observed=observed, root_cause=cause,
                            notes=[*left_out(plan), *grid_note(plan)])


def gap_split(precision: str, roof_ms: float, chain_ms: float, step_ms: float) -> str:
    """Where a precision's gap to its roofline is: in the matmul kernels themselves, or in the
    rest of the step (what the step costs beyond its matmuls alone)."""
    head = (f"{precision}: the step's matmuls alone, through the library's kernel, take "
            f"{fmt_ms(chain_ms)} ({fmt_ratio(chain_ms / roof_ms)} the roofline: how fast that "
            f"kernel streams these matrices); ")
    if step_ms >= chain_ms:
        return head + (f"the best step takes {fmt_ms(step_ms - chain_ms)} more: the rest of "
                       f"the step (attention, norms, kernel launches, guards).")
    return head + (f"the best step is {fmt_ms(chain_ms - step_ms)} faster than that: its "
                   f"matmuls are not the library's (gemv=inductor writes its own).")


def lever_effects(plan: Plan, results: Results) -> list[str]:
    """What each lever did to each precision's compiled step it was tried on, measured against
    the same precision without it (warm ms/token; overlapping repeats are within noise)."""
    lines = []
    for name, chosen in LEVERS.items():
        effects = []
        for precision in (p for p in PRECISIONS if name and name in levers_for(plan, p)):
            against = versus(results.get(f"{precision}{name}"), results.get(precision),
                             metric="tpot_ms")
            effects.append(f"{precision} {against.text}")
        if effects:
            lines.append(f"{chosen.what}: {'; '.join(effects)}.")
    return lines


left_out = TEMPLATE.when_quick(
    "--quick holds the compiled fp32 step and HF eager against the roofline (each "
    "lever and each other precision is one more cold compile); run without --quick for the "
    "grid")


def pairs(plan: Plan) -> list[tuple[str, str]]:
    """Each lever against its precision's compiled step without it."""
    return [(f"{precision}{name}", precision) for precision in PRECISIONS
            for name in levers_for(plan, precision) if name]


EXPERIMENT = Experiment(
    TEMPLATE, runs, build, left_out=left_out, measures_machine=True, pairs=pairs,
    figures=lambda c: [c.of(roofline_bars)] if c.section["configs"].get("roofline_ms_per_token")
    else [])


ROOFLINE_BARS = ("memory roofline", "matmuls alone", "compiled", "best lever")


def roofline_bars(section: Mapping, caption: Caption) -> Chart:
    """Per precision: its memory roofline, its matmuls alone, the compiled step as it is and
    the best lever's step (ms per output token, log scale)."""
    configs = section.get("configs") or {}
    roofs = configs.get("roofline_ms_per_token") or {}
    best = configs.get("precisions") or {}
    precisions = list(roofs)
    figure, (axes,) = new_figure(8.5, 4.6)
    series: dict[str, dict] = {}
    width = 0.8 / len(ROOFLINE_BARS)
    for p_index, precision in enumerate(precisions):
        values = {"memory roofline": roofs.get(precision),
                  "matmuls alone": (best.get(precision) or {}).get("matmul_chain_ms"),
                  "compiled": _median((configs.get(precision) or {}).get("ms_per_token")),
                  "best lever": (best.get(precision) or {}).get("compiled_ms")}
        series[precision] = {**values, "best_config": (best.get(precision) or {}).get("config")}
        for b_index, bar in enumerate(ROOFLINE_BARS):
            if values[bar] is None:
                continue
            axes.bar(p_index + (b_index - 1.5) * width, values[bar], width,
                     label=bar if p_index == 0 else None, **bar_style(b_index))
    eager = _median((configs.get("hf eager") or {}).get("ms_per_token"))
    if eager is not None:
        axes.axhline(eager, color="black", linestyle="--", linewidth=1.0,
                     label="HF eager generate (fp32)")
    series["hf eager"] = {"ms_per_token": eager}
    axes.set_xticks(range(len(precisions)), precisions)
    log_scale(axes)
    axes.set_ylabel("time per output token (ms, log scale)")
    axes.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return finish("roofline", "Roofline per precision", figure, caption.text(
        "Memory roofline: weight bytes one decode step reads ÷ measured bandwidth. Compiled: "
        "the fullgraph step as it is; best lever: its fastest lever (median of warm passes)."),
        series)


def _median(spread: Mapping | None) -> float | None:
    return (spread or {}).get("median")
