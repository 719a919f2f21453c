"""E3 — dynamic shapes: with static shapes every new input length recompiles; dynamic=True
compiles once. No bucketing, so every distinct length is a new shape."""

from __future__ import annotations

from dataclasses import asdict
from itertools import groupby

from probe.bench.experiments.base import (
    Experiment,
    Results,
    Template,
    compiled_text,
    served,
    warm_row,
)
from probe.common.units import NO_DATA, fmt_s
from probe.contract.options import OptConfig
from probe.runs.plan import Plan, RunSpec
from probe.runs.results import section_figures
from probe.runs.verdict import usable, versus

TEMPLATE = Template(
    "E3", "Dynamic shapes",
    hypothesis="With static shapes every new input length recompiles; dynamic shapes compile "
               "once.",
    variable="dynamic: off vs on (no bucketing, so every distinct length is a new shape)",
    control="dynamic=off",
    expected="recompiles grow with distinct lengths when off; roughly constant when on.")
STATIC_UNBUCKETED = OptConfig(compile="default", decode="fullgraph")
left_out = TEMPLATE.when_quick(
    "--quick leaves out dynamic=on (its symbolic-shape compile is the longest of the "
    "study; the check, recompiles growing with the distinct lengths, needs dynamic=off "
    "only); run without --quick to include it")


def runs(plan: Plan) -> dict[str, RunSpec]:
    specs = {"off": plan.spec(STATIC_UNBUCKETED, edges="none")}
    if not plan.quick:
        specs["on"] = plan.spec(STATIC_UNBUCKETED.with_option("dynamic", "on"), edges="none")
    return specs


def build(plan: Plan, results: Results, env: dict) -> dict:
    off, on = results.get("off"), results.get("on")
    rows: list[list[str]] = []
    configs: dict[str, dict] = {}
    observed: list[str] = []
    cause: list[str] = []
    for role, outcome in (("off", off), ("on", on))[:1 if plan.quick else 2]:
        configs[role] = section_figures(outcome)
        result = usable(outcome)
        if isinstance(result, str):
            rows.append([f"dynamic={role}", result] + [NO_DATA] * 7)
            continue
        configs[role]["curve"] = [asdict(p) for p in result.curve]
        done = result.compiles + result.recompiles
        per = result.compile_s / done if done else None
        configs[role]["compile_s_per_compile"] = per
        rows.append([f"dynamic={role}", str(result.distinct_input_lengths),
                     str(result.compiles), str(result.recompiles),
                     fmt_s(result.compile_s), fmt_s(per), *warm_row(result)[:3]])
    curve_rows: list[list[str]] = []
    if served(off) and off.curve:
        on_curve = on.curve if served(on) else ()
        for i, point in enumerate(off.curve):
            other = (str(on_curve[i].recompiles) if i < len(on_curve)
                     else "not run (--quick)" if plan.quick else NO_DATA)
            curve_rows.append([str(i + 1), str(point.input_tokens), str(point.distinct_shapes),
                               str(point.recompiles), other])
        lengths = off.curve[-1].distinct_shapes
        recompiles = [p.recompiles for p in off.curve]
        new_lengths = max(lengths - 1, 0)
        per_length = recompiles[-1] / new_lengths if new_lengths else None
        configs["off"]["recompiles_per_new_length"] = per_length
        per_compile = configs["off"].get("compile_s_per_compile")
        observed.append(
            f"dynamic off: recompiles grew with the distinct lengths seen — "
            f"{' → '.join(str(r) for r in dedupe_steps(recompiles))} over 1 → {lengths} lengths"
            + (f" ({per_length:.1f} per new length: one per compiled function)"
               if per_length else "")
            + f"; {fmt_s(off.compile_s)} of compiling in all"
            + (f", {fmt_s(per_compile)} each." if per_compile else "."))
        if off.recompile_limit_hits or off.compile_fallbacks:
            observed.append("dynamic off hit torch._dynamo's recompile limit: with fullgraph=True "
                            "that is a hard failure, and the engine served the rest of the run "
                            "eager.")
    if served(on):
        observed.append(f"dynamic on: {compiled_text(on)} ({on.recompiles} recompiles) over "
                        f"the same {on.distinct_input_lengths} lengths.")
        if served(off):
            configs["on"]["vs_off"] = versus(on, off).as_dict()
            observed.append(f"warm p50 with dynamic shapes: {configs['on']['vs_off']['text']} "
                            f"than static.")
    reasons = off.recompile_reasons if served(off) else ()
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
    return TEMPLATE.section(configs=configs, table=table, observed=observed, root_cause=cause,
                            extra_tables=extra, notes=list(left_out(plan)))


def dedupe_steps(values: list[int]) -> list[int]:
    return [value for value, _ in groupby(values)]


def checks(section: dict) -> dict:
    curve = section.get("configs", {}).get("off", {}).get("curve")
    if not curve:
        return {}
    grows = all(b["recompiles"] >= a["recompiles"] for a, b in zip(curve, curve[1:]))
    more = curve[-1]["recompiles"] > curve[0]["recompiles"]
    return {"e3_recompiles_by_distinct_length": [[p["distinct_shapes"], p["recompiles"]]
                                                 for p in curve],
            "e3_ok": bool(grows and more and curve[-1]["distinct_shapes"] > 1)}


EXPERIMENT = Experiment(TEMPLATE, runs, build, checks, left_out=left_out,
                        pairs=lambda plan: [("on", "off")],
                        figures=lambda charts: [charts.timeline, charts.cdf])
