"""Capacity at the SLO — per config, the highest offered rate at which attainment stays at or
above the target in an open-loop replay of the study's trace (bracketed and bisected in a few
runs, probe/runs/capacity.py): the knee where the SLO stops holding. Opt-in
(`--experiments capacity --slo …`): each run is a fresh engine and a replay."""

from __future__ import annotations

from probe.bench.experiments.base import (
    EAGER_FULLGRAPH,
    HF_EAGER,
    REFERENCE,
    OpenLoopExperiment,
    Template,
)
from probe.common.units import fmt_fraction, fmt_num
from probe.contract.options import OptConfig
from probe.runs.capacity import Capacity, find_capacity
from probe.runs.openloop import OpenLoopStudy
from probe.runs.rate_runs import rate_run, replay_at

QUICK_RUNS, FULL_RUNS = 4, 6
MIN_REQUESTS = 12

TEMPLATE = Template(
    "capacity", "Capacity at the SLO",
    hypothesis="Each optimization moves the rate a config can take while the SLO still holds "
               "for the target share of requests; the knee is where queueing pushes the tail "
               "out of the SLO.",
    variable="the offered rate (open loop, the trace's own gaps scaled), per config",
    control="the SLO and its attainment target; the same requests of the trace; warm engines",
    expected="attainment near 100% below the knee and falling fast past it; faster configs "
             "have their knee at a higher rate.")


def configs(quick: bool) -> dict[str, OptConfig]:
    chosen = {"hf-eager": HF_EAGER, "eager-fullgraph": EAGER_FULLGRAPH}
    if not quick:
        chosen["compiled"] = REFERENCE
    return chosen


def measure(study: OpenLoopStudy) -> tuple[dict, dict]:
    context, plan = study.context, study.plan
    if context.slo is None:
        raise ValueError("capacity at the SLO needs --slo")
    workload = study.workload(plan.trace)
    start = study.capacity_rps(plan.trace)
    requests = max(len(plan.requests), MIN_REQUESTS)
    runs_dir = context.out_dir / "runs" if context.out_dir else None
    found: dict[str, Capacity] = {}
    for name, options in configs(plan.quick).items():
        def one(rate: float, name=name, options=options):
            study.message(f"capacity {name} at {rate:.3g} req/s")
            save = runs_dir / f"capacity__{name}__{rate:.4g}rps.json" if runs_dir else None
            return rate_run(replay_at(context, options, workload, rate=rate, requests=requests,
                                      trace_name=plan.trace, save_to=save), rate, save)
        found[name] = find_capacity(one, start_rps=start, target=context.slo_target,
                                    max_runs=QUICK_RUNS if plan.quick else FULL_RUNS)
    results = {"slo": context.slo.as_dict(), "target": context.slo_target,
               "start_rps": start, "requests": requests,
               "configs": {k: v.as_dict() for k, v in found.items()}}
    return results, build(found, context.slo.text(), context.slo_target, start, requests)


def build(found: dict[str, Capacity], slo: str, target: float, start: float,
          requests: int) -> dict:
    rows, observed = [], []
    for name, capacity in found.items():
        low, high = capacity.bracket
        rows.append([name, fmt_num(capacity.capacity_rps, 3),
                     f"{fmt_num(low, 3)}–{fmt_num(high, 3)}", str(len(capacity.runs)),
                     ", ".join(f"{r.rate_rps:.3g}: {fmt_fraction(r.slo_attainment)}"
                               for r in capacity.runs)])
        observed.append(f"{name}: {capacity.text()}.")
    notes = [f"SLO {slo}, target attainment {target:.0%}; {requests} requests per run, the "
             f"search starts at the one-at-a-time capacity ({start:.3g} req/s), doubles or "
             "halves until one run meets the target and one misses, then bisects",
             "the knee is the bracket: the low end was measured to meet the target, the high "
             "end to miss it; every run's session is in runs/capacity__*.json"]
    table = {"columns": ["config", "capacity (req/s)", "bracket", "runs",
                         "attainment by rate"], "rows": rows}
    return TEMPLATE.section(table=table, observed=observed, root_cause=[
        "Below the knee a request waits little and its latency is its service time; past it the "
        "queue grows for the length of the replay and the later requests' TTFT and latency "
        "leave the SLO, so attainment falls."], notes=notes,
        configs={k: v.as_dict() for k, v in found.items()})


EXPERIMENT = OpenLoopExperiment(
    TEMPLATE, measure, estimate_s=lambda plan: 120.0 if plan.quick else 600.0)
