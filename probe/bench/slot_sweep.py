"""E7's slot sweep: continuous batching at full load on the Azure conversation trace, at each
slot count of a ladder, with the throughput, how busy the device was (probe/runs/device_busy.py)
and the loop's host time against its step period: what more slots buy, and where it stops
(a host-bound loop, or a device that is full). Issue #41 asks E7 for it.

On a GPU the slots run their CUDA graphs (compile=reduce-overhead, bf16: the loop built for
it) and the ladder ends at the slots sized from its memory; on a CPU, eager in fp32, where a
step is compute-bound and a few slots tell the story.
"""

from __future__ import annotations

from dataclasses import dataclass

from probe.analysis.stats import session_segments, summarize, throughput_rps, tokens_per_s
from probe.common.units import fmt_ms, fmt_num
from probe.contract.options import OptConfig
from probe.contract.records import BatchSteps
from probe.runs.device_busy import busy_source
from probe.runs.openloop import OpenLoopStudy, full_load

TRACE = "azure-conv"
# 0: the slots the engine sizes from the device's memory (docs/gpu.md)
LADDERS = {"cuda": (16, 64, 256, 0), "cpu": (2, 4, 8)}
OPTIONS = {"cuda": OptConfig(decode="fullgraph", batching="continuous", precision="bf16",
                             compile="reduce-overhead"),
           "cpu": OptConfig(decode="fullgraph", batching="continuous")}
REQUESTS_PER_SLOT = 4           # enough for the slots to fill and turn over a few times
MIN_REQUESTS = 24


@dataclass(frozen=True)
class SlotRun:
    slots: int                      # as the engine ran them (a sized count resolved)
    sized: bool                     # the count came from the device's memory
    requests: int
    failed: int
    tokens_per_s: float | None
    served_rps: float | None
    p95_ms: float | None
    busy_pct: float | None
    steps: BatchSteps | None
    j_per_token: float | None

    def as_dict(self) -> dict:
        return {"slots": self.slots, "sized": self.sized, "requests": self.requests,
                "failed": self.failed, "tokens_per_s": self.tokens_per_s,
                "served_rps": self.served_rps, "p95_ms": self.p95_ms,
                "device_busy_pct": self.busy_pct, "j_per_token": self.j_per_token,
                "host_ms": None if self.steps is None else self.steps.host_ms,
                "join_ms": None if self.steps is None else self.steps.join_ms,
                "period_ms": None if self.steps is None else self.steps.period_ms}


def sweep(study: OpenLoopStudy, device_type: str) -> list[SlotRun]:
    workload = study.workload(TRACE)
    options = OPTIONS.get(device_type, OPTIONS["cpu"])
    runs = []
    for slots in LADDERS.get(device_type, LADDERS["cpu"]):
        requests = max(MIN_REQUESTS, len(study.plan.requests), REQUESTS_PER_SLOT * slots)
        study.message(f"E7 slots: {slots or 'sized'} slots, {requests} requests of {TRACE} "
                      f"at full load")
        data, busy = full_load(study.context, options, workload, slots=slots,
                               requests=requests)
        run = slot_run(data, busy, sized=slots == 0)
        runs.append(run)
        study.keep("E7", f"slots/{slots or 'sized'}", run.as_dict())
    return runs


def slot_run(data, busy: float | None, *, sized: bool) -> SlotRun:
    """One run's figures, from its session: the one throughput, latency and energy functions."""
    records = list(data.records)
    ok = [r for r in records if r.ok]
    steps = next(iter(data.batch_steps.values()), None)
    segment = next(iter(session_segments(data)), None)
    energy = None if segment is None else segment.energy
    return SlotRun(
        slots=steps.slots if steps is not None else 0, sized=sized, requests=len(ok),
        failed=len(records) - len(ok), tokens_per_s=tokens_per_s(records),
        served_rps=throughput_rps(records), p95_ms=summarize(r.latency_ms for r in ok).p95,
        busy_pct=busy, steps=steps,
        j_per_token=None if energy is None else energy.j_per_token)


def table(runs: list[SlotRun]) -> dict:
    rows = []
    for run in runs:
        steps = run.steps
        host = ("—" if steps is None or steps.host_ms is None or steps.period_ms is None else
                f"{steps.host_ms:.2f} (joins {steps.join_ms or 0:.2f}) / "
                f"{steps.period_ms:.2f} ms")
        rows.append([f"{run.slots}" + (" (sized)" if run.sized else ""), str(run.requests),
                     str(run.failed), fmt_num(run.tokens_per_s, 0), fmt_num(run.served_rps, 2),
                     fmt_ms(run.p95_ms), fmt_num(run.busy_pct, 0), host,
                     fmt_num(run.j_per_token, 3)])
    return {"title": f"Continuous batching at full load on {TRACE}, by slot count",
            "columns": ["slots", "served", "failed", "tok/s", "req/s", "p95", "device busy %",
                        "host ms a step (joins) / period", "J/token"], "rows": rows}


def observed(runs: list[SlotRun], device_type: str) -> list[str]:
    measured = [(run, run.tokens_per_s) for run in runs if run.tokens_per_s]
    if len(measured) < 2:
        return []
    (first, first_rate) = measured[0]
    (last, last_rate) = max(measured, key=lambda pair: pair[0].slots)
    line = (f"{TRACE} at full load: {fmt_num(first_rate, 0)} tok/s at {first.slots} slots, "
            f"{fmt_num(last_rate, 0)} at {last.slots} ({last_rate / first_rate:.2f}×)")
    if first.busy_pct is not None and last.busy_pct is not None:
        line += (f"; device busy {first.busy_pct:.0f}% → {last.busy_pct:.0f}% "
                 f"({busy_source(device_type)})")
    lines = [line]
    if last.steps is not None and last.steps.bound is not None:
        lines.append(f"at {last.slots} slots: {last.steps.text()}")
    return lines
