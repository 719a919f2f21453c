"""E2 — graph breaks: HF generate() under torch.compile against the break-free fullgraph loop."""

from __future__ import annotations

from dataclasses import asdict

from probe.bench.experiments.base import (
    REFERENCE,
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
from probe.runs.results import BreakReason, RunResult, section_figures
from probe.runs.spread import fmt_spread
from probe.runs.verdict import usable, versus

TEMPLATE = Template(
    "E2", "Graph breaks",
    hypothesis="Compiling HF generate() leaves graph breaks that keep it from the speed of a "
               "break-free decode loop.",
    variable="decode path under compile=default: hf-generate vs fullgraph",
    control="decode=hf-generate (how most teams start)",
    expected="hf-generate: many graphs and breaks (.item(), data-dependent stopping); "
             "fullgraph: one graph per compiled function, 0 breaks, faster warm.")
HF_COMPILED = OptConfig(compile="default", decode="hf-generate", bucketing="on")


def runs(plan: Plan) -> dict[str, RunSpec]:
    return {"hf-generate": plan.spec(HF_COMPILED), "fullgraph": plan.spec(REFERENCE)}


def break_causes(reasons: tuple[BreakReason, ...]) -> list[str]:
    text = " ".join(r.reason for r in reasons)
    causes = []
    if "item()" in text:
        causes.append("`.item()` reads a tensor's value into Python (generate()'s loop "
                      "checks it every step)")
    if "data-dependent" in text.lower() or "data dependent" in text.lower():
        causes.append("data-dependent control flow: the stopping criteria branch on "
                      "tensor values (`unfinished_sequences.max() == 0`)")
    if "disable" in text:
        causes.append("functions marked torch.compiler.disable end the graph (the token "
                      "streamer's `put`, as any streaming output does, and HF helpers)")
    return causes


def per_function(result: RunResult) -> str:
    parts = [f"{n} {name}" for name, n in sorted(result.graphs_per_function.items())]
    return ", ".join(parts) or "no graphs"


def build(plan: Plan, results: Results, env: dict) -> dict:
    hf, fg = results.get("hf-generate"), results.get("fullgraph")
    rows: list[list[str]] = []
    reason_rows: list[list[str]] = []
    configs: dict[str, dict] = {}
    observed: list[str] = []
    cause: list[str] = []
    for role, outcome in (("hf-generate", hf), ("fullgraph", fg)):
        configs[role] = section_figures(outcome)
        result = usable(outcome)
        if isinstance(result, str):
            rows.append([f"decode={role}", result] + [NO_DATA] * 8)
            continue
        configs[role]["break_reasons"] = [asdict(r) for r in result.break_reasons]
        places = len({r.location for r in result.break_reasons})
        configs[role]["break_locations"] = places
        rows.append([f"decode={role}", str(result.graphs), str(result.graph_breaks),
                     str(places), fmt_s(result.compile_s), *warm_row(result)])
        for reason in sorted(result.break_reasons, key=lambda r: -r.count)[:10]:
            reason_rows.append([role, reason.reason[:160], reason.location, str(reason.count)])
    if served(hf) and served(fg):
        configs["fullgraph"]["vs_hf_generate"] = versus(fg, hf).as_dict()
        observed.append(f"hf-generate under torch.compile: {hf.graph_breaks} graph breaks at "
                        f"{configs['hf-generate'].get('break_locations')} places in generate(), "
                        f"{compiled_text(hf)}; warm p50 {fmt_spread(hf.steady.latency_p50_ms)}.")
        observed.append(f"fullgraph: {fg.graph_breaks} breaks, {compiled_text(fg)} "
                        f"({per_function(fg)}); warm p50 "
                        f"{fmt_spread(fg.steady.latency_p50_ms)}: "
                        f"{configs['fullgraph']['vs_hf_generate']['text']} than hf-generate.")
        causes = break_causes(hf.break_reasons)
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
    return TEMPLATE.section(configs=configs, table=table, observed=observed, root_cause=cause,
                            extra_tables=extra)


def checks(section: dict) -> dict:
    configs = section.get("configs", {})
    if not configs:
        return {}
    hf_breaks = configs.get("hf-generate", {}).get("graph_breaks")
    fg_breaks = configs.get("fullgraph", {}).get("graph_breaks")
    return {"e2_hf_generate_breaks": hf_breaks, "e2_fullgraph_breaks": fg_breaks,
            "e2_ok": bool((hf_breaks or 0) > 0 and fg_breaks == 0)}


EXPERIMENT = Experiment(TEMPLATE, runs, build, checks,
                        pairs=lambda plan: [("fullgraph", "hf-generate")])
