"""E4 — bucketing: no buckets / the planner's K / powers of two, on the compiled reference."""

from __future__ import annotations

from typing import Mapping

from probe.bench.experiments.base import REFERENCE, Experiment, Results, Template, served
from probe.bench.experiments.e3_dynamic_shapes import STATIC_UNBUCKETED
from probe.common.units import NO_DATA, fmt_fraction, fmt_ms, fmt_s
from probe.report_charts.canvas import Caption, Chart, bar_style, finish, new_figure
from probe.runs.plan import Plan, RunSpec
from probe.runs.results import section_figures
from probe.runs.spread import fmt_spread
from probe.runs.verdict import usable, versus
from workloads.buckets import evaluate_edges, plan_buckets, powers_of_two_plan

TEMPLATE = Template(
    "E4", "Bucketing",
    hypothesis="Padding inputs to K planned buckets bounds the compiled graphs at K with less "
               "padding than powers of two.",
    variable="bucket set: none, the planner's K buckets, powers of two",
    control="no bucketing",
    expected="planner: ≤ K shapes per function and less padding waste than powers of two; "
             "none: one shape per distinct length, no waste.")
ROLES = ("none", "planner", "pow2")
# Why the powers-of-two row is computed, not served: its shapes and padding follow from the
# lengths and edges alone, and no verdict reads its latency; served, it was a cold compile of
# its own (258 s of a 6,795 s cold study on a 2-core Zen 3 VM).
COMPUTED_NOTE = ("The powers-of-two row is computed from the replayed lengths and its edges "
                 "(shapes per function, padding waste), not compiled and served: no verdict "
                 "reads its latency, and serving it was one more cold compile. The planner's "
                 "row is served: its shapes per function are counted from the compiles.")


def runs(plan: Plan) -> dict[str, RunSpec]:
    return {"none": plan.spec(STATIC_UNBUCKETED, edges="none"),
            "planner": plan.spec(REFERENCE, edges="planner")}


def build(plan: Plan, results: Results, env: dict) -> dict:
    rows: list[list[str]] = []
    configs: dict[str, dict] = {}
    observed: list[str] = []
    names = {"none": "none", "planner": plan.planner_name, "pow2": "powers of two"}
    edges = {"none": (), "planner": plan.planner_edges, "pow2": plan.pow2_edges}
    lengths = [r.input_length for r in plan.requests]
    for role in ROLES:
        outcome = results.get(role)
        if role == "pow2":
            computed = evaluate_edges(lengths, edges[role])
            configs[role] = {"served": False, "edges": list(edges[role]),
                             "planned_waste_pct": computed.waste_pct,
                             "padding_waste_pct": computed.waste_pct,
                             "compiled_graphs": computed.distinct_shapes_after}
            note = "not served"
            rows.append([f"{names[role]} (computed)", ",".join(map(str, edges[role])),
                         str(computed.distinct_shapes_after), note, note, note,
                         f"{computed.waste_pct:.1f}%", note, note])
            continue
        analytic = evaluate_edges(lengths, edges[role]) if edges[role] else None
        configs[role] = {**section_figures(outcome), "edges": list(edges[role]),
                         "planned_waste_pct": analytic.waste_pct if analytic else 0.0,
                         "compiled_graphs": outcome.max_graphs_per_function
                         if served(outcome) else None}
        result = usable(outcome)
        if isinstance(result, str):
            rows.append([names[role], result] + [NO_DATA] * 7)
            continue
        rows.append([names[role], ",".join(map(str, edges[role])) or "—",
                     str(result.max_graphs_per_function), str(result.graphs),
                     str(result.recompiles), fmt_s(result.compile_s),
                     fmt_fraction(result.padding_waste), fmt_spread(result.steady.latency_p95_ms),
                     fmt_ms(result.cold_start_ms)])
    planner, none = results.get("planner"), results.get("none")
    if served(planner):
        ok = planner.max_graphs_per_function <= plan.bucket_count
        observed.append(f"{plan.planner_name}: {planner.max_graphs_per_function} compiled "
                        f"shapes per function ({'≤' if ok else '>'} K={plan.bucket_count}), "
                        f"padding waste {fmt_fraction(planner.padding_waste)}.")
    observed.append(f"powers of two (computed from the lengths, not served): "
                    f"{configs['pow2']['compiled_graphs']} shapes, padding waste "
                    f"{configs['pow2']['padding_waste_pct']:.1f}%.")
    if served(none):
        observed.append(f"no bucketing: {none.max_graphs_per_function} shapes per function "
                        f"(one per distinct length), {none.recompiles} recompiles, "
                        f"{fmt_s(none.compile_s)} compiling.")
    if served(planner) and served(none):
        configs["planner"]["p95_vs_none"] = versus(planner, none, "latency_p95_ms").as_dict()
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
    cause = ["Each padded width is one compiled graph per function, so bucketing bounds the "
             "number of compiles by the bucket count instead of by the traffic's distinct "
             "lengths; the price is compute spent on pad tokens. Powers of two place edges by "
             "a fixed rule; the planner places its K edges where the lengths are (an exact "
             "dynamic programme on the replayed lengths), so at the same or a smaller number "
             "of shapes it pads less. With more shapes than K, powers of two can pad less "
             "than the planner: the trade is compiles against padding."]
    table = {"columns": ["buckets", "edges", "shapes per function", "graphs", "recompiles",
                         "compile", "padding waste", "warm p95", "cold start"], "rows": rows}
    return TEMPLATE.section(configs=configs, table=table, observed=observed, root_cause=cause,
                            K=plan.bucket_count, notes=[COMPUTED_NOTE])


def checks(section: dict) -> dict:
    configs = section.get("configs")
    if not configs:
        return {}
    planner, pow2 = configs.get("planner", {}), configs.get("pow2", {})
    graphs, waste = planner.get("compiled_graphs"), planner.get("padding_waste_pct")
    pow2_waste = pow2.get("padding_waste_pct")
    return {"e4_planner_graphs": graphs, "e4_K": section.get("K"),
            "e4_planner_waste_pct": waste, "e4_pow2_waste_pct": pow2_waste,
            "e4_ok": bool(graphs is not None and graphs <= section["K"] and waste is not None
                          and pow2_waste is not None and waste < pow2_waste)}


EXPERIMENT = Experiment(TEMPLATE, runs, build, checks,
                        whole=lambda plan: ("planner", "none"),   # the p95 verdict
                        figures=lambda charts: [charts.cdf, charts.of(padding_waste)])


def padding_waste(section: Mapping, caption: Caption) -> Chart:
    """E4: the padding waste of each bucket set, on the replayed requests and (computed by the
    planner) over the whole trace."""
    configs = section.get("configs") or {}
    sets = [role for role in ("none", "planner", "pow2") if role in configs]
    whole = configs.get("whole_trace") or {}
    replayed = [configs[r].get("padding_waste_pct") for r in sets]
    over_trace = [{"none": 0.0 if whole else None, "planner": whole.get("planner_waste_pct"),
                   "pow2": whole.get("pow2_waste_pct")}[r] for r in sets]
    figure, (axes,) = new_figure(7.0, 4.0)
    labels = [f"{r}\n{','.join(map(str, configs[r].get('edges') or [])) or 'no edges'}"
              for r in sets]
    for b_index, (label, values) in enumerate((("replayed requests", replayed),
                                               ("whole trace (computed)", over_trace))):
        for index, value in enumerate(values):
            if value is not None:
                axes.bar(index + (b_index - 0.5) * 0.38, value, 0.38, label=label,
                         **bar_style(b_index))
                axes.annotate(f"{value:.1f}%", (index + (b_index - 0.5) * 0.38, value),
                              xytext=(0, 2), textcoords="offset points", ha="center",
                              fontsize=7)
    handles, names = axes.get_legend_handles_labels()
    unique = dict(zip(names, handles))
    axes.legend(unique.values(), unique.keys(), loc="upper left")
    axes.set_xticks(range(len(sets)), labels)
    axes.set_ylabel("padding waste (% of padded input tokens)")
    return finish("padding_waste", "E4 — padding waste per bucket set", figure, caption.text(
        "Waste: (padded − real) / padded input tokens; bucket edges under each set."),
        {"sets": sets, "replayed_pct": replayed, "whole_trace_pct": over_trace})
