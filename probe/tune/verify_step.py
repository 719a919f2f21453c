"""`infertop doctor SESSION.json --verify`: the doctor's next step measured. Arm A is the
session's current config, arm B the same with the step's options changed; both replay the
session's own requests of that config (their input and output lengths and arrival times, the
first `requests` of them in arrival order) on fresh engines of the session's model and device,
through tune's own measurement (probe/tune/evaluate.py: each run a fresh engine, warmed before
its first arrival — the warm-up's requests are not recorded — the control and the candidate
alternated run by run, A B then B A). The arms' records are compared by
probe/analysis/ab_compare.py, and the measured B is held against the step's prediction by
next_step.prediction_held, as the doctor holds the next segment."""

from __future__ import annotations

import sys
import threading
import warnings
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable, Mapping

from probe.analysis.ab_compare import Comparison, compare, laid_end_to_end
from probe.analysis.ab_table import comparison_lines
from probe.analysis.next_step import NextStep, prediction_held
from probe.analysis.session_diagnosis import SessionDiagnosis
from probe.analysis.stats import compile_s, segment_stats
from probe.checks.engine_inputs import PRESETS, check_device, check_model
from probe.common.errors import BadInput
from probe.contract.objective import Slo
from probe.contract.options import OptConfig
from probe.contract.prepared_workload import PreparedWorkload
from probe.contract.records import RequestRecord
from probe.contract.session import SessionData
from probe.runs.runs import RunContext
from probe.session_store.snapshot import read_document, saved_serving, saved_session
from probe.tune.evaluate import Job, evaluate
from workloads.buckets import plan_buckets
from workloads.fitting import fit_to_model
from workloads.trace_records import Trace, TraceRequest

DEFAULT_REQUESTS = 24
DEFAULT_PASSES = 2
MAX_INPUT = 512
BUCKETS = 4                 # the planner's K when the session saved no edges
BURST_RPS = 1000.0          # requests that all arrived at one instant: 1 ms apart


@dataclass(frozen=True)
class VerifyPlan:
    """What the verification serves, read from the session before torch loads."""
    config_id: str
    step: NextStep
    control: OptConfig          # arm A
    candidate: OptConfig        # arm B
    model: str
    device: str
    compile_backend: str
    threads: int | None
    bucket_edges: tuple[int, ...]
    bucket_source: str
    requests: tuple[RequestRecord, ...]     # the replayed ones, in arrival order
    slo: Slo | None
    source: str

    @property
    def change(self) -> dict[str, str]:
        return dict(self.step.options)

    @property
    def rate_rps(self) -> float:
        """The requests' own mean arrival rate: the replay keeps their gaps as recorded."""
        span = self.requests[-1].arrival_s - self.requests[0].arrival_s
        return (len(self.requests) - 1) / span if span > 0 else BURST_RPS


@dataclass(frozen=True)
class Verification:
    plan: VerifyPlan
    passes: int
    comparison: Comparison
    held: tuple[bool, str] | None

    def as_dict(self) -> dict:
        c = self.comparison.as_dict()
        return {"change": self.plan.change, "requests": c["requests"], "metrics": c["metrics"],
                "verdict": c["verdict"], "requests_to_tell": c["requests_to_tell"],
                "prediction_held": None if self.held is None else self.held[0]}


def verify_plan(path: str, document: Mapping[str, Any], data: SessionData,
                report: SessionDiagnosis, requests: int) -> VerifyPlan:
    """BadInput (exit 2) for a session that cannot be verified: no next step for its current
    config (SessionData.current_config, as the dashboard shows it), nothing served, a model
    folder that no longer exists."""
    if requests < 2:
        raise BadInput(f"--verify-requests {requests}: at least 2 (an interval needs two)")
    config_id = data.current_config(saved_serving(dict(document)))
    diagnosis = report.segment(config_id) if config_id else None
    if diagnosis is None or config_id is None:
        raise BadInput(f"{path}: --verify: the session served no request; nothing to verify")
    step = diagnosis.next_step
    if step is None:
        raise BadInput(f"{path}: --verify: the doctor has no next step for {config_id} (the "
                       f"current config); nothing to verify")
    control = data.configs[config_id].options
    candidate = replace(control, **step.options)
    # the sections' types and ranges were checked as the session was read (saved_session)
    model = document.get("model", {}).get("name")
    if not model:
        raise BadInput(f"{path}: --verify: the session does not name its model")
    try:
        check_model(model)
    except BadInput as exc:
        kind = "" if model in PRESETS else " (was the folder moved or deleted?)"
        raise BadInput(f"{path}: --verify needs the session's model{kind}: {exc}") from None
    environment = document.get("environment", {})
    device = environment.get("device")
    device = "auto" if device is None else device
    check_device(device)
    served = sorted((r for r in data.records if r.config_id == config_id and r.ok),
                    key=lambda r: (r.arrival_s, r.seq))[:requests]
    if len(served) < 2:
        raise BadInput(f"{path}: --verify: {config_id} served {len(served)} request(s); the "
                       f"comparison needs at least 2")
    settings = document.get("settings", {})
    edges = tuple(settings.get("bucket_edges") or ())
    source = str(settings.get("bucket_source", "the session's"))
    if not edges:
        edges = tuple(plan_buckets([r.input_tokens for r in served], BUCKETS).edges)
        source = f"planner (K={BUCKETS})"
    backend = settings.get("compile_backend")
    return VerifyPlan(config_id, step, control, candidate, model, device,
                      "inductor" if backend is None else backend,
                      environment.get("torch_threads"), edges, source, tuple(served), data.slo,
                      path)


def workload_of(plan: VerifyPlan) -> PreparedWorkload:
    """The replayed requests as a trace: arrival times as recorded (from the first), the
    input lengths the engine read, the tokens each generated."""
    t0 = plan.requests[0].arrival_s
    trace = Trace(f"{plan.source} ({plan.config_id})", tuple(
        TraceRequest(timestamp_ms=(r.arrival_s - t0) * 1000, input_length=r.input_tokens,
                     output_length=max(1, r.output_tokens), id=r.id) for r in plan.requests),
        source=plan.source)
    trace, fit = fit_to_model(trace, max_input=MAX_INPUT, max_output=max(trace.output_lengths()))
    return PreparedWorkload(trace, fit, plan.bucket_edges, plan.bucket_source,
                            max(trace.output_lengths()))


def run_verify(plan: VerifyPlan, *, passes: int, runs: Path,
               say: Callable[[str], None] = lambda text: None) -> Verification:
    """Serve both arms, `passes` runs each, alternated; compare their records. Each run's
    session is written to the folder `runs`, which exists: the command's --verify-runs, or
    a temporary folder the command removes however the run ends (infertop/commands/doctor.py,
    where a stop is supervised)."""
    import torch
    import transformers

    from probe.engine.model.loading import load_model
    from probe.engine.observe.device_probe import resolve_device

    if passes < 1:
        raise BadInput(f"--verify-passes {passes}: at least 1")
    transformers.logging.set_verbosity_error()     # only infertop speaks on the terminal
    if plan.threads:
        torch.set_num_threads(plan.threads)
    try:
        device = resolve_device(plan.device)
    except BadInput as exc:
        raise BadInput(f"{plan.source}: --verify serves on the session's device "
                       f"({plan.device}): {exc}") from None
    workload = workload_of(plan)
    context = RunContext(model=plan.model, device=str(device), loaded=load_model(plan.model),
                         max_input=MAX_INPUT, repeats=passes,
                         compile_backend=plan.compile_backend, slo=plan.slo)
    change = " ".join(f"{k}={v}" for k, v in plan.change.items())
    job = Job(plan.candidate, f"B ({change})", 1, len(plan.requests), passes,
              plan.source, plan.rate_rps, control=plan.control)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        measured = evaluate(job, context, workload, runs_dir=runs, named_dir=runs,
                            stop=threading.Event(), say=say)
        assert measured.control is not None
        arm_a = [_session(path) for path in measured.control.sessions]
        arm_b = [_session(path) for path in measured.sessions]
    records_a = laid_end_to_end([d.records for d in arm_a])
    records_b = laid_end_to_end([d.records for d in arm_b])
    comparison = compare(records_a, records_b, slo=plan.slo,
                         compile_s_a=_mean(compile_s(d.events) for d in arm_a),
                         compile_s_b=_mean(compile_s(d.events) for d in arm_b))
    after = segment_stats("B", records_b, [], [])
    return Verification(plan, passes, comparison, prediction_held(plan.step, after))


def _session(path: str) -> SessionData:
    return saved_session(read_document(path), source=f"verify run {path}")


def _mean(values) -> float | None:
    data = list(values)
    return sum(data) / len(data) if data else None


def say_stderr(text: str) -> None:
    print(f"doctor --verify: {text}", file=sys.stderr, flush=True)


def verify_text(v: Verification) -> str:
    """The doctor's section for --verify: one line a figure, the verdict, the prediction."""
    plan, c = v.plan, v.comparison
    change = " ".join(f"{k}={v}" for k, v in plan.change.items())
    lines = [f"verify {plan.config_id}'s next step: A = {plan.control.label()}, B = A with "
             f"{change}; {plan.model} on {plan.device}, {len(plan.requests)} recorded requests "
             f"replayed at their arrival times, {v.passes} run(s) an arm on fresh engines "
             f"alternated (A B, B A, …), warm-up excluded",
             *comparison_lines(c)]
    if v.held is None:
        lines.append("  prediction: nothing numeric was predicted to check")
    else:
        lines.append(f"  prediction: {'held' if v.held[0] else 'did not hold'}: {v.held[1]}")
    return "\n".join(lines)
