"""Observer cost: warm throughput with the compile probe installed vs uninstalled on the same
engine (alternating passes), and the probe's per-request bookkeeping timed alone."""

from __future__ import annotations

import math
import time

from probe.bench.experiments.base import REFERENCE, Experiment, Results, Template
from probe.common.units import fmt_fraction, fmt_num
from probe.contract.records import RequestRecord
from probe.runs.plan import Plan, RunSpec
from probe.runs.results import ObserverFigures, RunResult, section_figures
from probe.runs.runs import Extra, RunContext, RunHooks, serve_pass
from probe.runs.spread import Spread, fmt_spread
from probe.runs.stopping import SEQUENTIAL, medians, paired
from probe.runs.verdict import compare, failed_text, paired_comparison

TEMPLATE = Template(
    "observer", "Observer cost",
    hypothesis="The probes cost nothing measurable in steady state.",
    variable="compile probe installed vs uninstalled (no callbacks, no log handlers, no "
             "per-request bookkeeping)",
    control="probes off",
    expected="warm throughput within noise.")


class NullProbe:
    """Stands in for the CompileProbe while the probes are off: no dynamo callbacks, no log
    handlers and none of the engine's per-request bookkeeping."""

    def __init__(self, breaks) -> None:
        self._breaks = list(breaks)
        self.compile_seconds = 0.0

    def set_context(self, request_id, config_id) -> None:
        pass

    def collect(self) -> list:
        return []

    def graph_breaks(self) -> list:
        return self._breaks


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


def measure_observer(engine, spec: RunSpec, context: RunContext,
                     hooks: RunHooks) -> ObserverFigures:
    """Alternating on/off passes (on, off, off, on, …) so slow drift hits both alike. Under
    --stopping sequential they stop after a pair once the paired verdict is settled: each
    request's latency with the probes on over its median with them off, the figure and the
    always-valid interval of every other bench verdict (probe/runs/stopping.py)."""
    cap = observer_pairs(context.repeats)
    samples: dict[str, list[float | None]] = {"on": [], "off": []}
    records: dict[str, list[RequestRecord]] = {"on": [], "off": []}
    real_probe = engine.probe
    order: list[str] = []
    for i in range(cap):
        for state in ("on", "off") if i % 2 == 0 else ("off", "on"):
            order.append(state)
            if state == "off":
                real_probe.uninstall()
                engine.probe = NullProbe(real_probe.graph_breaks())
            try:
                result = serve_pass(engine, spec, 100 + len(order) - 1,
                                    f"observer {state} {len(order)}/{2 * cap}", hooks.on_request)
            finally:
                if state == "off":
                    engine.probe = real_probe
                    real_probe.install()
            samples[state].append(result.figures().tokens_per_s)
            records[state].extend(result.records)
        found = paired("probes off", records["on"], medians(records["off"]))
        if context.stopping == SEQUENTIAL and found.decided:
            break
    on, off = Spread.of(samples["on"]), Spread.of(samples["off"])
    comparison = (paired_comparison(found.interval, found.requests_to_tell)
                  if found.interval is not None and math.isfinite(found.interval.lo)
                  else compare(on, off, lower_is_better=False, better="faster", worse="slower"))
    per_request_us = bookkeeping_us(real_probe)
    latencies = [r.latency_ms for state in records.values() for r in state if r.ok]
    mean_latency_ms = sum(latencies) / len(latencies) if latencies else None
    return ObserverFigures(
        probes_on_tokens_per_s=on, probes_off_tokens_per_s=off,
        overhead_fraction=(1 - on.median / off.median) if on.median and off.median else None,
        verdict=comparison.verdict, comparison=comparison.text, order=tuple(order),
        bookkeeping_us_per_request=per_request_us,
        bookkeeping_fraction=(per_request_us / 1000 / mean_latency_ms
                              if mean_latency_ms else None),
        cap_passes=2 * cap)


def observer_pairs(repeats: int) -> int:
    """The most on/off pairs of passes the observer serves."""
    return max(repeats, 3)


def expected_passes(context: RunContext) -> int:
    """Sequential: one pair, the fewest it serves (more only while the first pair leaves the
    verdict open); fixed: every pair."""
    return 2 * (1 if context.stopping == SEQUENTIAL else observer_pairs(context.repeats))


OBSERVER = Extra("observer", measure_observer, passes=expected_passes)


def runs(plan: Plan) -> dict[str, RunSpec]:
    return {"probed": plan.spec(REFERENCE)}


def build(plan: Plan, results: Results, env: dict) -> dict:
    result = results.get("probed")
    observer = result.observer if isinstance(result, RunResult) else None
    configs = {"probed": section_figures(result)}
    rows, observed, cause = [], [], []
    if observer is None:
        observed.append(failed_text(result) or "the observer passes did not run")
    else:
        configs["probed"]["observer"] = observer.as_dict()
        rows.append(["probes on", fmt_spread(observer.probes_on_tokens_per_s,
                                             lambda v: fmt_num(v, 1))])
        rows.append(["probes off", fmt_spread(observer.probes_off_tokens_per_s,
                                              lambda v: fmt_num(v, 1))])
        overhead, share = observer.overhead_fraction, observer.bookkeeping_fraction
        observed.append(f"warm tokens/s with the probes on vs off: {observer.comparison}"
                        + (f" (overhead {fmt_fraction(overhead)} by the medians)"
                           if overhead is not None else "")
                        + f", over {len(observer.order)} alternating passes"
                        + (f" of at most {observer.cap_passes} (settled)"
                           if len(observer.order) < observer.cap_passes else "") + ".")
        rows.append(["per-request probe bookkeeping, timed alone",
                     f"{observer.bookkeeping_us_per_request:.1f} µs "
                     f"({fmt_fraction(share)} of a warm request)"])
        observed.append(f"the probe's per-request bookkeeping, timed on its own: "
                        f"{observer.bookkeeping_us_per_request:.1f} µs, "
                        f"{fmt_fraction(share)} of a warm request.")
        mechanism = ("The compile probe is dynamo callbacks and logging handlers: they run when "
                     "dynamo compiles, not when compiled code runs. In steady state what is left "
                     "is the engine's per-request bookkeeping (reading compile metrics and break "
                     "counts once per request).")
        if observer.verdict in ("within noise", "faster"):
            cause.append(mechanism + " The throughput passes cannot tell it from noise.")
        elif share is not None and share < 0.01 and (overhead or 0) > 0.02:
            cause.append(mechanism + f" Timed alone it is {fmt_fraction(share)} of a request, so the "
                                     f"{fmt_fraction(overhead)} the throughput passes show is not the "
                                     "probe: it is the spread of short passes on a shared "
                                     "machine.")
        else:
            cause.append(mechanism + f" Here it measured {observer.comparison}.")
    table = {"columns": ["state", "warm tokens/s (median, range)"], "rows": rows}
    return TEMPLATE.section(configs=configs, table=table, observed=observed, root_cause=cause)


EXPERIMENT = Experiment(TEMPLATE, runs, build,
                        extras=lambda plan: {"probed": frozenset({OBSERVER})})
