"""E7 — batching: off vs dynamic vs continuous, open loop, on bursty traffic and a rate sweep.

Unlike E1–E6 (requests served back to back, so a latency is a service time), batching only
shows under queueing: requests arrive at their trace times, scaled to each offered rate, and
wait. The rates are set from this machine's own single-request capacity, so the sweep crosses
the point where one-at-a-time serving saturates wherever the hardware puts it. Each mode's
decode step is held against the batch's roofline: the weights read once per step plus every
row's own KV cache.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from probe.analysis.batch_roofline import batch_step_ms
from probe.analysis.stats import summarize
from probe.bench.experiments.base import OpenLoopExperiment, Template
from probe.bench.slot_sweep import OPTIONS, SlotRun, sweep
from probe.bench.slot_sweep import TRACE as SLOT_TRACE
from probe.bench.slot_sweep import observed as slot_observed
from probe.bench.slot_sweep import table as slot_table
from probe.common.units import fmt_bytes, fmt_ms, fmt_num, fmt_ratio
from probe.contract.options import OptConfig
from probe.contract.records import RequestRecord
from probe.engine.measure.bandwidth_cache import machine_bandwidth
from probe.engine.observe.device_probe import resolve_device
from probe.report_charts.bench_charts import RateCurve, rate_curve
from probe.runs.device_busy import busy_source
from probe.runs.openloop import (
    MAX_BATCH,
    OpenLoopFigures,
    OpenLoopStudy,
    open_loop_figures,
    replay,
)

MODES = ("off", "dynamic", "continuous")
# (trace, offered rates as multiples of the measured one-at-a-time capacity)
FULL_SCENARIOS = (("batch", (2.0,)), ("chat", (0.5, 1.0, 2.0, 4.0)))
QUICK_SCENARIOS = (("chat", (4.0,)),)          # the trace E8 replays: one capacity to measure
MIN_REQUESTS = 24
# A dynamic batch returns when its longest row is done, so a shorter row's time per token
# counts steps after its own end: its step time is not measured from the records.
STEP_MEASURED = ("off", "continuous")

TEMPLATE = Template(
    "E7", "Batching",
    hypothesis="Batching raises throughput under load; dynamic batching pays for it in "
               "tail latency (a batch returns when its longest request is done), "
               "continuous batching does not (a request leaves the moment it is done).",
    variable=f"batching: off, dynamic (window 50 ms, up to {MAX_BATCH}), continuous "
             f"({MAX_BATCH} slots); then continuous batching's slot count at full load",
    control="batching=off (one request at a time), same arrivals",
    expected="below capacity all three alike; above it, off's queue grows without bound, "
             "dynamic keeps up further with a worse p95 than continuous, continuous "
             "saturates last; KV peak grows with occupancy.")


@dataclass(frozen=True)
class BatchRoofline:
    """The fastest a step of B rows can be: it reads the weights once and each row's KV."""
    weight_bytes: int               # one decode step's weights (probe.engine.measure.step_roofline.decode_step_bytes)
    kv_bytes_per_position: int      # 2 · layers · heads · d_kv · bytes per element
    bandwidth_gb_s: float

    def step_ms(self, records: list[RequestRecord], rows: float) -> float | None:
        return batch_step_ms(self.weight_bytes, self.kv_bytes_per_position,
                             self.bandwidth_gb_s, records, rows)


@dataclass(frozen=True)
class BatchingRun:
    trace: str
    factor: float
    mode: str
    figures: OpenLoopFigures
    step_ms: float | None = None            # measured: the requests' median time per token
    roofline_step_ms: float | None = None   # the batch roofline at this run's mean occupancy

    @property
    def roofline_ratio(self) -> float | None:
        if self.step_ms is None or not self.roofline_step_ms:
            return None
        return self.step_ms / self.roofline_step_ms

    def as_dict(self) -> dict:
        return {"trace": self.trace, "factor": self.factor, "mode": self.mode,
                **self.figures.as_dict(), "step_ms": self.step_ms,
                "roofline_step_ms": self.roofline_step_ms,
                "ratio_to_batch_roofline": self.roofline_ratio}


@dataclass(frozen=True)
class BatchingResults:
    capacity_rps: dict[str, float]
    runs: dict[str, BatchingRun]
    roofline: BatchRoofline | None = None
    requests: int = MIN_REQUESTS
    slot_runs: tuple[SlotRun, ...] = ()     # a full study's slot sweep (bench/slot_sweep.py)
    device_type: str = "cpu"

    def as_dict(self) -> dict:
        return {"capacity_rps": dict(self.capacity_rps),
                "runs": {key: run.as_dict() for key, run in self.runs.items()},
                "batch_roofline": None if self.roofline is None else vars(self.roofline),
                "slots": [run.as_dict() for run in self.slot_runs]}


def batch_roofline(study: OpenLoopStudy) -> BatchRoofline:
    """From the roofline experiment's bandwidth when it ran, else this machine's cached one."""
    from probe.engine.decode.kv_cache import used_bytes_formula
    from probe.engine.measure.step_roofline import decode_step_bytes
    from probe.engine.model.loading import DecoderDims
    model = study.context.require_model().model
    dims = DecoderDims.of(model)
    measured = ((study.environment.get("roofline") or {}).get("bandwidth") or {}).get(
        "read_gb_s")
    step_bytes = decode_step_bytes(model).total
    bandwidth = measured or machine_bandwidth(study.context.device, step_bytes).read_gb_s
    element = next(model.parameters()).element_size()
    per_position = used_bytes_formula(element_bytes=element, heads=dims.heads, d_kv=dims.d_kv,
                                      decoder_layers=dims.layers, self_positions=1,
                                      cross_positions=0)
    return BatchRoofline(step_bytes, per_position, bandwidth)


def batching_run(trace: str, factor: float, mode: str, records: list[RequestRecord],
                 rate: float, roofline: BatchRoofline | None,
                 device_busy_pct: float | None = None) -> BatchingRun:
    figures = open_loop_figures(records, rate, device_busy_pct)
    if mode not in STEP_MEASURED or roofline is None or not figures.occupancy_mean:
        return BatchingRun(trace, factor, mode, figures)
    ok = [r for r in records if r.ok]
    return BatchingRun(trace, factor, mode, figures,
                       step_ms=summarize(r.tpot_ms for r in ok).p50,
                       roofline_step_ms=roofline.step_ms(ok, figures.occupancy_mean))


def measure(study: OpenLoopStudy) -> tuple[dict, dict]:
    requests = max(len(study.plan.requests), MIN_REQUESTS)
    roofline = batch_roofline(study)
    capacity, runs = {}, {}
    for trace, factors in QUICK_SCENARIOS if study.plan.quick else FULL_SCENARIOS:
        workload = study.workload(trace)
        capacity[trace] = study.capacity_rps(trace)
        for factor in factors:
            rate = capacity[trace] * factor
            for mode in MODES:
                study.message(f"E7 {trace} {mode} at {rate:.2f} req/s ({factor:g}× capacity)")
                data, busy = replay(study.context,
                                    OptConfig(decode="fullgraph", batching=mode), workload,
                                    rate=rate, requests=requests)
                key = f"{trace}/{factor:g}x/{mode}"
                runs[key] = batching_run(trace, factor, mode, list(data.records), rate, roofline,
                                         busy)
                study.keep("E7", key, runs[key].as_dict())     # a signal next keeps it
    device_type = resolve_device(study.context.device).type
    slot_runs = () if study.plan.quick else tuple(sweep(study, device_type))
    results = BatchingResults(capacity, runs, roofline, requests, slot_runs, device_type)
    return results.as_dict(), build(results)


def saturation_rps(results: BatchingResults, trace: str, mode: str) -> float | None:
    """The highest offered rate this mode kept up with (served ≥ 90% of it)."""
    kept = [run.figures.offered_rps for run in results.runs.values()
            if run.trace == trace and run.mode == mode and run.figures.keeps_up]
    return max(kept, default=None)


def build(results: BatchingResults) -> dict:
    rows, observed = [], []
    for run in results.runs.values():
        f = run.figures
        rows.append([run.trace, f"{run.factor:g}× ({f.offered_rps:.2f})", run.mode, str(f.failed),
                     fmt_num(f.served_rps, 2), fmt_num(f.tokens_per_s, 0),
                     fmt_num(f.device_busy_pct, 0),
                     fmt_ms(f.latency_ms.p50), fmt_ms(f.latency_ms.p95), fmt_ms(f.latency_ms.p99),
                     fmt_num(f.occupancy_mean, 2), fmt_bytes(f.kv_peak_bytes),
                     fmt_ms(run.step_ms), fmt_ratio(run.roofline_ratio)])
    for trace, capacity in results.capacity_rps.items():
        observed += _observed(results, trace, capacity)
    observed += slot_observed(list(results.slot_runs), results.device_type)
    cause = [
        "At batch 1 a decode step reads every weight for one token; a batch of B reads them "
        "once for B tokens, so the step's cost grows far slower than B (the step is bound "
        "by per-operation overhead and weight reads, not arithmetic).",
        "Dynamic batching pads a batch to its longest input and decodes until its longest "
        "output: short requests wait for long ones. Continuous batching refills a slot at "
        "the next step, so occupancy stays high without holding finished requests.",
    ]
    notes = [f"open loop, {results.requests} requests per run, decode=fullgraph, compile=off; "
             f"rates are multiples of the measured capacity"]
    if results.roofline is not None:
        r = results.roofline
        cause.append(
            "The batch roofline: a step of B rows reads the weights once "
            f"({fmt_bytes(r.weight_bytes)}) and each row's filled KV positions "
            f"({fmt_bytes(r.kv_bytes_per_position)} per position: 2 · layers · heads · d_kv · "
            f"bytes), at {r.bandwidth_gb_s:.1f} GB/s. Batching spreads the weight bytes over "
            "B tokens, so the per-token floor falls as occupancy rises; a static slot "
            "attends over its whole region, masked, so it reads more than the positions it "
            "filled — part of the gap to this floor.")
        notes.append("ms/step: the median of the requests' time per output token (a row gets "
                     "one token per step); × batch roofline: that over (weights + mean "
                     "occupancy × a row's mean KV bytes per step) ÷ bandwidth. Not for dynamic "
                     "batching: a batch returns when its longest row is done, so a shorter "
                     "row's time per token counts steps after its own end")
    table = {"columns": ["trace", "offered (req/s)", "batching", "failed", "served req/s",
                         "tok/s", "device busy %", "p50", "p95", "p99", "occupancy", "KV peak",
                         "ms/step", "× batch roofline"], "rows": rows}
    extra = [slot_table(list(results.slot_runs))] if results.slot_runs else []
    if results.slot_runs:
        notes.append(f"by slot count: {SLOT_TRACE} at full load (twice the slots outstanding), "
                     f"{OPTIONS.get(results.device_type, OPTIONS['cpu']).label()}; device busy: "
                     f"{busy_source(results.device_type)}, the mean over the run")
    return TEMPLATE.section(table=table, observed=observed, root_cause=cause, notes=notes,
                            extra_tables=extra)


def _observed(results: BatchingResults, trace: str, capacity: float) -> list[str]:
    saturations = {mode: saturation_rps(results, trace, mode) for mode in MODES}
    lines = [f"{trace}: one-at-a-time capacity {capacity:.2f} req/s; kept up to "
             + ", ".join(f"{mode} {fmt_num(rate, 2)} req/s" for mode, rate in saturations.items())]
    mine = [run for run in results.runs.values() if run.trace == trace]
    top = max(run.factor for run in mine)
    at_top = {run.mode: run for run in mine if run.factor == top}
    lost = {mode: run.figures.failed for mode, run in at_top.items() if run.figures.failed}
    off, cont = at_top.get("off"), at_top.get("continuous")
    if lost:
        lines.append(f"{trace} at {top:g}× capacity: not comparable, requests failed ("
                     + ", ".join(f"{mode} {n}" for mode, n in lost.items()) + ")")
    elif off and cont and off.figures.served_rps and cont.figures.served_rps:
        lines.append(f"{trace} at {top:g}× capacity: continuous served "
                     f"{cont.figures.served_rps / off.figures.served_rps:.2f}× the throughput of "
                     f"off, p95 {fmt_ms(cont.figures.latency_ms.p95)} vs "
                     f"{fmt_ms(off.figures.latency_ms.p95)}")
    for run in at_top.values():
        if run.roofline_ratio:
            lines.append(f"{trace} at {top:g}× capacity, {run.mode}: "
                         f"{fmt_ms(run.step_ms)} per step at {run.figures.occupancy_mean:.1f} "
                         f"rows = {fmt_ratio(run.roofline_ratio)} the batch roofline "
                         f"({fmt_ms(run.roofline_step_ms)})")
    return lines


left_out = TEMPLATE.when_quick(
    "--quick replays chat at 4× capacity only (batch at 2× and chat at 0.5–2× show the same "
    "modes below and at saturation); run without --quick for the sweep")


EXPERIMENT = OpenLoopExperiment(
    # measured: 843 s for the full E7 on t5-small (2-core Zen 3, the cold study of 2026-12-07,
    # after --rate came to mean the rate of the requests replayed: 652 s before, 1,500 at first)
    TEMPLATE, measure, estimate_s=lambda plan: 60.0 if plan.quick else 845.0,
    left_out=left_out, figures=lambda c: [c.rate(lambda: e7_curves(c.runs))] if c.runs else [])


def e7_curves(results: Mapping) -> dict[str, list[RateCurve]]:
    """E7's runs (report.json runs.E7.runs) as one panel per trace, one curve per mode."""
    panels: dict[str, dict[str, list[Mapping]]] = {}
    for run in (results.get("runs") or {}).values():
        panels.setdefault(run["trace"], {}).setdefault(run["mode"], []).append(run)
    return {trace: [rate_curve(mode, runs) for mode, runs in modes.items()]
            for trace, modes in panels.items()}
