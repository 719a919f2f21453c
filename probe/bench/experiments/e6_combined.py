"""E6 — combined: one more optimization per step, each judged against the step before."""

from __future__ import annotations

from typing import Mapping

from probe.analysis.drift import RANDOM_WEIGHTS_CAVEAT
from probe.analysis.drift import REFERENCE as DRIFT_REFERENCE
from probe.analysis.sequential import UNDECIDED
from probe.bench.experiments.base import (
    HF_EAGER,
    LEAN_STEP,
    REFERENCE,
    REFERENCE_BF16,
    REFERENCE_INT8,
    Experiment,
    Results,
    Template,
    served,
    settings_text,
    with_settings,
)
from probe.common.units import NO_DATA, fmt_bytes, fmt_ms, fmt_num, fmt_ratio, fmt_s
from probe.contract.figures import DriftStats
from probe.contract.options import OptConfig
from probe.contract.settings import EngineSettings
from probe.engine.model.loading import PRESETS
from probe.report_charts.canvas import Caption, Chart, finish, log_scale, new_figure
from probe.runs.plan import Plan, RunSpec
from probe.runs.results import Outcome, RunResult, section_figures, steady_spread
from probe.runs.spread import fmt_spread
from probe.runs.verdict import usable, versus

TEMPLATE = Template(
    "E6", "Combined",
    hypothesis="The optimizations stack: each step keeps or improves latency, memory and "
               "compile stability.",
    variable="one more optimization per step: baseline → +KV cache → +bucketing → +compile → "
             "+graph-break removal → +bf16 → +int8 → "
             f"+lean step ({settings_text(LEAN_STEP)})",
    control="baseline: HF generate, eager, no KV cache, fp32",
    expected="each step faster or leaner than the last; the final table says which to keep.")
# The cache comes first, so every compiled step has static decode shapes and is a run another
# experiment serves anyway (+compile is E2's hf-generate, +graph-break removal the shared
# REFERENCE). The seed's order (baseline → +compile → +graph-break removal → +bucketing →
# +KV cache) compiled three configs without the cache, which recompile as their outputs grow
# until dynamo's limit and then serve eager: a config nobody serves, measured at 1,879 s of the
# 7,128 s cold study on t5-small (2-core Zen 3), a quarter of it. Still one change a step.
STEPS: tuple[tuple[str, OptConfig], ...] = (
    ("baseline", OptConfig(kv_cache="off")),
    ("+KV cache", HF_EAGER),
    ("+bucketing", OptConfig(bucketing="on")),
    ("+compile", OptConfig(compile="default", bucketing="on")),
    ("+graph-break removal", REFERENCE),
    ("+bf16", REFERENCE_BF16),
    ("+int8", REFERENCE_INT8),
    # The per-step overhead levers the roofline experiment measures (gemv=inductor is left
    # out: int8's matmuls are torchao's, not aten.mm, so it has nothing to decompose).
    ("+lean step", with_settings(REFERENCE_INT8, LEAN_STEP)),
)
# --quick stops at +graph-break removal: each of +bf16, +int8 and +lean step is one more cold
# compile of every shape.
QUICK_STEPS = STEPS[:5]
left_out = TEMPLATE.when_quick(
    "--quick stops at +graph-break removal (+bf16, +int8 and +lean step are each one more "
    "cold compile of every shape); run without --quick for every step")


def steps(plan: Plan) -> tuple[tuple[str, OptConfig], ...]:
    return QUICK_STEPS if plan.quick else STEPS


def runs(plan: Plan) -> dict[str, RunSpec]:
    return {name: plan.spec(options) for name, options in steps(plan)}


def agreement(drift: DriftStats | None) -> str:
    if drift is None:
        return NO_DATA
    return (f"{100 * drift.token_agreement:.1f}% "
            f"({100 * drift.exact_match:.0f}% exact, n={drift.sampled_requests})")


def _row(name: str, options: OptConfig, outcome: Outcome, config: dict) -> list[str]:
    result = usable(outcome)
    if isinstance(result, str):
        return [name, options.label(), result] + [NO_DATA] * 10
    stability = "eager" if options.compile == "off" else (
        f"{result.graphs} graphs, {result.graph_breaks} breaks, {result.recompiles} recompiles"
        + (", limit hit" if result.recompile_limit_hits else "")
        + (", fell back to eager" if result.compile_fallbacks else ""))
    return [name, options.label(), fmt_s(result.compile_s) if options.compiled else "—",
            fmt_ms(result.cold_start_ms), fmt_spread(result.steady.latency_p50_ms),
            fmt_spread(result.steady.latency_p95_ms),
            fmt_spread(result.steady.tokens_per_s, lambda v: fmt_num(v, 0)),
            f"{fmt_bytes(result.weight_bytes)} + {fmt_bytes(result.kv_cache_peak_bytes)} KV",
            stability,
            config.get("vs_baseline", {}).get("text", "—") if name != "baseline" else "—",
            agreement(result.drift), config["verdict"]["text"]]


def stability(run: RunResult) -> str:
    if run.compile_fallbacks:
        return "fell back to eager (compile failed)"
    if run.recompile_limit_hits:
        return "recompile limit hit"
    if run.steady_compiles:
        return f"{run.steady_compiles} compiles after warm-up"
    if run.options.compile == "off":
        return "eager (nothing to compile)"
    return "stable: no compiles after warm-up"


STEP_WORDS = {"faster": "keep", "slower": "drop", "within noise": "no measurable gain",
              UNDECIDED: "no difference yet"}


def step_verdict(result: Outcome, previous: Outcome) -> dict:
    """Keep, drop or no measurable gain for one more optimization over the step before."""
    run = usable(result)
    if isinstance(run, str):
        return {"verdict": "n/a", "text": run}
    unsupported = [n for n in run.notes if "int8" in n]
    if run.options.quant == "int8" and unsupported:
        return {"verdict": "not supported", "text": "int8 not supported here: " + unsupported[0]}
    against = versus(run, previous)
    steady = stability(run)
    if run.compile_fallbacks or run.recompile_limit_hits:
        word = "unstable"
    elif against.verdict == "noise unknown":
        word = "keep?" if (against.ratio or 1) < 1 else "drop?"
    else:
        word = STEP_WORDS.get(against.verdict, "n/a")
    return {"verdict": word, "text": f"{word}: {against.text} than the step before; {steady}",
            "vs_previous": against.as_dict(), "stability": steady}


def build(plan: Plan, results: Results, env: dict) -> dict:
    rows: list[list[str]] = []
    configs: dict[str, dict] = {}
    observed: list[str] = []
    previous: RunResult | None = None
    baseline = results.get("baseline")
    for name, options in steps(plan):
        result = results.get(name)
        configs[name] = section_figures(result)
        configs[name]["verdict"] = (step_verdict(result, previous)
                                    if previous is not None or name != "baseline"
                                    else {"verdict": "control", "text": "control"})
        if served(result) and served(baseline):
            configs[name]["vs_baseline"] = versus(result, baseline).as_dict()
        run = usable(result)
        if not isinstance(run, str):
            configs[name]["memory_bytes"] = ((run.weight_bytes or 0)
                                             + (run.kv_cache_peak_bytes or 0))
        rows.append(_row(name, options, result, configs[name]))
        if served(result):
            previous = result
    last = next((results.get(n) for n, _ in reversed(steps(plan)) if served(results.get(n))),
                None)
    if served(baseline) and last is not None and last is not baseline:
        p95 = {"baseline_ms": steady_spread(baseline, "latency_p95_ms").median,
               "last_ms": steady_spread(last, "latency_p95_ms").median}
        p95["times_better"] = (p95["baseline_ms"] / p95["last_ms"]
                               if p95["baseline_ms"] and p95["last_ms"] else None)
        configs["last_vs_baseline_p95"] = p95
        observed.append(f"baseline → last step: warm p50 "
                        f"{fmt_ms(steady_spread(baseline, 'latency_p50_ms').median)} → "
                        f"{fmt_ms(steady_spread(last, 'latency_p50_ms').median)} "
                        f"({versus(last, baseline).text}); warm p95 "
                        f"{fmt_ms(p95['baseline_ms'])} → {fmt_ms(p95['last_ms'])} "
                        f"({fmt_ratio(p95['times_better'])} better, the same requests); "
                        f"tokens/s {fmt_num(steady_spread(baseline, 'tokens_per_s').median, 0)} "
                        f"→ {fmt_num(steady_spread(last, 'tokens_per_s').median, 0)}.")
    for name, _ in steps(plan)[1:]:
        observed.append(f"{name}: {configs[name]['verdict']['text']}.")
    notes = list(left_out(plan))
    notes.append(f"token agreement: each config's greedy tokens against the {DRIFT_REFERENCE} "
                 f"reference, on 1 request in {EngineSettings.drift_every} (exact match in "
                 f"brackets)")
    if plan.model in PRESETS:
        notes.append(f"drift: {RANDOM_WEIGHTS_CAVEAT}")
    table = {"columns": ["step", "config", "compile", "cold start", "warm p50", "warm p95",
                         "tokens/s", "memory (weights + KV)", "compile stability",
                         "vs baseline (p50)", "token agreement", "verdict"], "rows": rows}
    return TEMPLATE.section(configs=configs, table=table, observed=observed,
                            root_cause=_causes(results), notes=notes)


def _causes(results: Results) -> list[str]:
    cause = []
    hf = results.get("+compile")
    if served(hf) and hf.graph_breaks:
        cause.append(f"+compile on hf-generate: {hf.graph_breaks} graph breaks split each step "
                     "into several graphs (see E2).")
    if served(hf) and hf.recompile_limit_hits:
        reasons = "; ".join(hf.recompile_reasons) or "none recorded"
        cause.append(f"+compile on hf-generate is unstable: {hf.recompiles} recompiles reached "
                     f"dynamo's recompile limit ({hf.recompile_limit_hits} times), and a function "
                     f"past its limit runs eager from then on, so this step measures mostly "
                     f"eager code. The guards that failed (first distinct ones): {reasons}. "
                     f"+graph-break removal's static-cache step keeps every shape fixed: one "
                     f"graph per bucket, no recompiles.")
    bf16, cached = results.get("+bf16"), results.get("+graph-break removal")
    if served(bf16) and served(cached):
        cause.append(f"+bf16 halves the weight bytes ({fmt_bytes(cached.weight_bytes)} → "
                     f"{fmt_bytes(bf16.weight_bytes)}); latency {versus(bf16, cached).text}: "
                     "at batch 1 a step only gets faster from fewer bytes when it is "
                     "memory-bound (see Roofline).")
    int8 = results.get("+int8")
    if served(int8):
        notes = [n for n in int8.notes if "int8" in n]
        if notes:
            cause.append("+int8: " + notes[0])
        else:
            cause.append(f"+int8 stores weights in {fmt_bytes(int8.weight_bytes)}; on a CPU "
                         "its matmuls are int8 GEMMs on activations quantized per call "
                         "(elsewhere torchao's weight-only kernel dequantizes on the fly), "
                         "which pays off when bytes, not operations, bound the step.")
    return cause


def checks(section: dict) -> dict:
    """Every cell filled, and every step served all its requests: a run that failed (or lost
    requests) leaves n/a cells, which fill the table but fail the check."""
    table = section.get("table", {})
    if not table:
        return {}
    empty = [(row[0], column) for row in table.get("rows", [])
             for column, value in zip(table["columns"], row) if str(value).strip() in ("", "None")]
    failed = [name for name, config in section.get("configs", {}).items()
              if "error" in config or config.get("failed")]
    p95 = section.get("configs", {}).get("last_vs_baseline_p95") or {}
    return {"e6_empty_cells": empty, "e6_failed_runs": failed,
            "e6_p95_times_better": p95.get("times_better"),
            "e6_ok": not empty and not failed and len(table.get("rows", [])) > 0}


def pairs(plan: Plan) -> list[tuple[str, str]]:
    """Each step against the one before (its keep / drop) and against the baseline."""
    names = [name for name, _ in steps(plan)]
    return ([(name, previous) for previous, name in zip(names, names[1:])]
            + [(name, "baseline") for name in names[2:]])


EXPERIMENT = Experiment(TEMPLATE, runs, build, checks, left_out=left_out, pairs=pairs,
                        figures=lambda charts: [charts.cdf, charts.of(e6_waterfall)])


# how E6's verdict words are drawn (hatch), so kept and dropped steps read without colour
VERDICT_HATCH = {"control": "", "keep": "", "keep?": "--", "no measurable gain": "---",
                 "drop": "xxx", "drop?": "xx", "unstable": "\\\\\\", "not supported": "///",
                 "n/a": "///"}


SHORT_VERDICT = {"no measurable gain": "no gain"}


def e6_waterfall(section: Mapping, caption: Caption) -> Chart:
    """E6: each step's warm p95 and tokens/s (median of the passes, bars from min to max),
    hatched by its verdict (kept, no gain, dropped, unstable)."""
    from matplotlib.patches import Patch
    configs = section.get("configs") or {}
    steps = [name for name, c in configs.items() if isinstance(c, Mapping) and "verdict" in c]
    figure, (left, right) = new_figure(10.0, 4.8, cols=2)
    series = {"steps": steps, "p95_ms": [], "p95_ms_low": [], "p95_ms_high": [], "tokens_per_s": [],
              "tokens_per_s_low": [], "tokens_per_s_high": [], "verdict": []}
    for figure_name, axes, key in (("p95_ms", left, "latency_p95_ms"),
                                   ("tokens_per_s", right, "tokens_per_s")):
        for index, step in enumerate(steps):
            spread = configs[step].get(key) or {}
            value = spread.get("median")
            series[figure_name].append(value)
            series[f"{figure_name}_low"].append(spread.get("low"))
            series[f"{figure_name}_high"].append(spread.get("high"))
            if value is None:
                continue
            verdict = configs[step]["verdict"].get("verdict", "n/a")
            axes.bar(index, value, color="#9ecae1" if verdict not in ("drop", "drop?")
                     else "#fdae6b", edgecolor="black", linewidth=0.6,
                     hatch=VERDICT_HATCH.get(verdict, "///"))
            if spread.get("low") is not None and spread.get("high") is not None:
                axes.errorbar(index, value, yerr=[[value - spread["low"]],
                                                  [spread["high"] - value]],
                              color="black", capsize=3, linewidth=0.9)
            if figure_name == "p95_ms":
                axes.annotate(SHORT_VERDICT.get(verdict, verdict), (index, value),
                              xytext=(0, 4), textcoords="offset points", ha="center",
                              va="bottom", rotation=90, fontsize=7)
        axes.set_xticks(range(len(steps)), steps, rotation=35, ha="right")
        axes.margins(y=0.25)
    series["verdict"] = [configs[s]["verdict"].get("verdict") for s in steps]
    shown = list(dict.fromkeys(series["verdict"]))
    right.legend([Patch(facecolor="#fdae6b" if v in ("drop", "drop?") else "#9ecae1",
                        edgecolor="black", hatch=VERDICT_HATCH.get(v, "///")) for v in shown],
                 shown, loc="lower right", title="verdict")
    log_scale(left)
    left.set_ylabel("warm p95 latency (ms, log scale)")
    right.set_ylabel("warm tokens/s")
    return finish("e6_waterfall", "E6 — one more optimization per step", figure, caption.text(
        "Bars: median of the warm passes; whiskers: their min–max. Hatches: keep (plain), "
        "no measurable gain (dashes), drop (crosses), unstable (backslashes)."), series)
