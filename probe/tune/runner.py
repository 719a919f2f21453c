"""`infertop tune`'s run: load the model and the trace once, then let the search (search.py)
measure each config (evaluate.py: a few warm open-loop replays at the rate, or a capacity
search, on fresh engines, each candidate alternated with the config it would replace, every
session saved; with `--ray`, one step's candidates as Ray tasks, one per node slot) and write
tune.json/tune.md after each step. Ctrl-C, SIGTERM or
SIGHUP ends the run in progress (it is not counted), keeps the steps done and exits 128 +
the signal, as `replay` and `bench` do."""

from __future__ import annotations

import argparse
import shlex
import signal
import sys
import threading
import warnings
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Callable, Iterator

from probe.checks.interrupts import STOP_SIGNALS, Interrupted, exit_status, interrupts_never_lost
from probe.checks.interrupts import say as say_now
from probe.common.errors import BadInput
from probe.contract.options import OptConfig
from probe.engine.workload_setup import prepare_workload
from probe.runs.runs import RunContext
from probe.tune.candidates import ordered
from probe.tune.combo import ComboState, baseline_setup, greedy_path, run_combo
from probe.tune.combo_report import write_combo
from probe.tune.confirm import ArmRun, arms_for, confirm
from probe.tune.doctor_seed import doctor_advice, doctor_seed
from probe.tune.evaluate import Job, arm_run, evaluate
from probe.tune.ray_pool import RayPool, nothing_measured
from probe.tune.report import saturation, write_tune
from probe.tune.saved_search import saved_search
from probe.tune.search import Measured, TuneState, run_tune
from probe.tune.space import EXHAUSTIVE_LIMIT, check_space, dimensions, space_size
from probe.tune.trial_pool import TrialPool
from probe.tune.trials import INTERRUPTED, Bounds, Trial, best
from probe.tune.tuned_settings import Setup, TunedSettings
from workloads.buckets import plan_buckets

MAX_INPUT = 512


def say(text: str) -> None:
    print(f"tune: {text}", file=sys.stderr, flush=True)


def run_tune_command(args: argparse.Namespace, baseline: OptConfig) -> int:
    import torch
    import transformers

    from probe.engine.model.loading import load_model
    from probe.engine.observe.device_probe import resolve_device

    workload = prepare_workload(args.trace)       # a bad trace is refused before any output
    resumed = list(saved_search(args.resume).trials) if getattr(args, "resume", None) else []
    transformers.logging.set_verbosity_error()   # only infertop speaks on the terminal
    if args.threads:
        torch.set_num_threads(args.threads)
    device = resolve_device(args.device)
    dims = dimensions(str(device), args.space)
    check_space(baseline, dims)
    if args.search == "exhaustive":
        size = space_size(baseline, dims, EXHAUSTIVE_LIMIT)
        if size > EXHAUSTIVE_LIMIT:
            raise BadInput(f"tune: --search exhaustive: the space holds more than "
                           f"{EXHAUSTIVE_LIMIT} configs; narrow it with --space KEY,… or use "
                           f"--search quick --trials N")
    loaded = load_model(args.model)
    out = Path(args.out)
    context = RunContext(model=args.model, device=str(device), loaded=loaded,
                         max_input=MAX_INPUT, repeats=args.repeats,
                         compile_backend=args.compile_backend, out_dir=out,
                         trace_info={"name": args.trace}, slo=args.slo,
                         slo_target=args.slo_target)
    stop = threading.Event()
    steps = None
    if args.ray is not None:        # a cluster that cannot be joined is refused before any file
        steps = RayPool.connect(args.ray, args.device, context, args.trace, args.threads,
                                out / "runs", stop, say)
    (out / "runs").mkdir(parents=True, exist_ok=True)
    # a resumed search's runs are named after every run already in runs/, never over them
    counter = iter(range(1 + max((int(p.name.split("_")[0]) for p in (out / "runs").glob("*_*")
                                  if p.name.split("_")[0].isdigit()), default=0), 100_000))
    state_rate: dict[str, float] = {}
    if not args.find_capacity:
        state_rate["rate"] = args.rate

    def job(options: OptConfig, label: str, control: OptConfig | None) -> Job:
        return Job(options, label, next(counter), args.requests, args.repeats, args.trace,
                   None if args.find_capacity else args.rate, state_rate.get("rate"), control)

    def found(measured: Measured) -> Measured:
        capacity = (measured.capacity or {}).get("capacity_rps")
        if capacity:
            state_rate["rate"] = capacity       # the next search starts from the last found
        return measured

    def setup_job(setup: Setup, label: str, control: Setup | None) -> Job:
        return replace(job(setup.options, label, control.options if control else None),
                       settings=setup.settings,
                       control_settings=control.settings if control else TunedSettings())

    def measured_here(one: Job) -> Measured:
        return found(evaluate(one, context, workload, runs_dir=out / "runs",
                              named_dir=out / "runs", stop=stop, say=say))

    def evaluate_here(options: OptConfig, label: str, control: OptConfig | None) -> Measured:
        return measured_here(job(options, label, control))

    def evaluate_setup(setup: Setup, label: str, control: Setup | None) -> Measured:
        return measured_here(setup_job(setup, label, control))

    def evaluate_many(jobs: list[tuple[OptConfig, str, OptConfig | None]]) -> list[Measured]:
        assert steps is not None
        return [found(m) for m in steps.measure([job(*each) for each in jobs])]

    def evaluate_on_ray(options: OptConfig, label: str, control: OptConfig | None) -> Measured:
        measured = evaluate_many([(options, label, control)])
        return measured[0] if measured else nothing_measured()

    command = "infertop " + " ".join(shlex.quote(a) for a in sys.argv[1:])
    report = dict(slo=args.slo, target=args.slo_target, capacity=args.find_capacity,
                  settings={"model": args.model, "trace": args.trace, "device": str(device),
                            "requests": args.requests, "repeats": args.repeats,
                            "budget_min": args.budget, "max_drift": args.max_drift,
                            "command": command, "baseline": baseline.as_dict(),
                            "replay_speed": _replay_speed(workload, args)})

    if args.search != "greedy":
        report["settings"]["argv"] = list(getattr(args, "argv", sys.argv[1:]))
        report["edges_for"] = lambda k: tuple(plan_buckets(workload.trace.input_lengths(),
                                                           k).edges)
        pool = None if steps is None else replace(steps, job_of=setup_job, arrived=found)

        def confirm_once(setup: Setup, role: str, repeat: int) -> ArmRun:
            name = f"{next(counter):02d}_confirm-{role}_{args.rate:.4g}rps.json"
            return arm_run(context, workload, setup, rate=args.rate, requests=args.requests,
                           trace_name=args.trace, save_to=out / "runs" / name, stop=stop)
        try:
            return _combo(args, baseline, dims, resumed, evaluate_setup, stop, out,
                          report, pool, confirm_once)
        finally:
            if steps is not None:
                steps.close()

    latest: list[TuneState] = [TuneState(final=baseline)]

    def on_step(step, state: TuneState) -> None:
        latest[0] = state
        verdict = "kept" if step.kept else ("skipped" if step.measured is None else "dropped")
        say(f"{step.change}: {verdict}: {step.why}")
        write_tune(out, state, rate_rps=state_rate.get("rate"), done=False, **report)

    received: list[int] = []
    try:
        with _stopped_by_signals(stop, received):
            state = run_tune(baseline, evaluate_on_ray if steps else evaluate_here, ordered,
                             capacity=args.find_capacity, max_drift=args.max_drift,
                             budget_s=args.budget * 60, stop=stop, on_step=on_step,
                             width=steps.width if steps else 1,
                             evaluate_many=evaluate_many if steps else None)
    except KeyboardInterrupt:          # a second signal: now, with the steps done
        state = latest[0]
        state.stopped = "interrupted"
    finally:
        if steps is not None:
            steps.close()
    write_tune(out, state, rate_rps=state_rate.get("rate"), done=not stop.is_set(), **report)
    saturated = saturation(state, args.find_capacity)
    if saturated:
        say(saturated)
    print(f"wrote {out / 'tune.md'} and {out / 'tune.json'}: chosen {state.final.label()}")
    return exit_status(received[0]) if received else 0


def _combo(args, baseline: OptConfig, dims, previous: list[Trial], evaluate_here, stop,
           out: Path, report: dict, pool: TrialPool | None = None,
           confirm_once: Callable[[Setup, str, int], ArmRun] | None = None) -> int:
    """--search quick|exhaustive: tune.json/tune.md written before and after every trial."""
    search = {"mode": args.search, "objectives": list(args.objective),
              "trials": args.trials if args.search == "quick" else None,
              "space": [d.key for d in dims],
              "bounds": {"slo_target": None if args.find_capacity else args.slo_target,
                         "max_memory": args.max_memory, "max_drift": args.max_drift,
                         "amortize": args.amortize,
                         "max_joules_per_token": args.max_joules_per_token}}
    bounds = Bounds(**search["bounds"])
    context = dict(search=search, slo_text=args.slo.text(), settings=report["settings"],
                   edges_for=report.get("edges_for"))
    latest: list[ComboState] = [ComboState(baseline_setup(baseline, dims))]

    # a finished trial of the stopped search was said then; a rerun one is said when it ends
    said = {t.number for t in previous if t.status != INTERRUPTED}

    def on_trial(state: ComboState) -> None:
        latest[0] = state
        for trial in state.trials:        # several may be in flight: each said as it ends
            if trial.status != "interrupted" and trial.number not in said:
                said.add(trial.number)
                say(f"trial {trial.number} {trial.setup.label()}: {trial.status}"
                    + (f": {trial.reason}" if trial.reason else ""))
        write_combo(out, state, done=False, **context)

    received: list[int] = []
    try:
        with _stopped_by_signals(stop, received, "the finished trials"):
            state = run_combo(baseline, evaluate_here, mode=args.search, dims=dims,
                              trials=args.trials, objectives=tuple(args.objective),
                              bounds=bounds, previous=previous,
                              seeds=lambda default, segment: quick_seeds(baseline, default,
                                                                         segment, dims),
                              budget_s=args.budget * 60, stop=stop, on_trial=on_trial,
                              pool=pool)
            if getattr(args, "confirm", False) and confirm_once is not None:
                context["confirmation"] = _confirmed(state, dims, args.repeats, confirm_once,
                                                     stop, args.objective[0])
    except KeyboardInterrupt:          # a second signal: now, with the trials done
        state = latest[0]
        state.stopped = "interrupted"
    write_combo(out, state, done=not stop.is_set() and not state.stopped, **context)
    if state.refused:                  # tune.json keeps the default's trial; one line, exit 2
        raise BadInput(f"tune: {state.refused}; {out / 'tune.json'} holds the default's trial")
    chosen = best(state.trials, args.objective[0])
    print(f"wrote {out / 'tune.md'} and {out / 'tune.json'}: {len(state.trials)} trial(s), "
          f"chosen {chosen.setup.label() if chosen else 'none (no trial met every constraint)'}")
    return exit_status(received[0]) if received else 0


def _confirmed(state: ComboState, dims, repeats: int,
               run_once: Callable[[Setup, str, int], ArmRun], stop,
               objective: str) -> dict | None:
    """--confirm: the chosen config, each of its changes alone and the default replayed
    again, alternated (probe/tune/confirm.py); None when nothing was chosen over the default
    or the search was stopped."""
    chosen = best(state.trials, objective)
    if stop.is_set() or chosen is None or chosen.setup == state.default:
        say("confirm: nothing to confirm (no config chosen over the default)"
            if not stop.is_set() else "confirm: not run (the search was stopped)")
        return None
    arms, skipped = arms_for(state.default, chosen.setup, dims)
    say(f"confirm: {len(arms)} arms, {repeats} alternated run(s) each: "
        + ", ".join(a.label for a in arms))
    result = confirm(arms, skipped, run_once, repeats=repeats, stop=stop, say=say)
    say("confirm: " + ("confirmed" if result.confirmed else "not confirmed") + ": "
        + "; ".join(f"against {v['against']}: {v['text']}" for v in result.verdicts()))
    return result.as_dict()


def quick_seeds(baseline: OptConfig, default: Trial, segment, dims) -> list[tuple[Setup, str]]:
    """--search quick's first trials: the doctor's next step on the default's first run,
    then the greedy path (the baseline's figures moving what they point at first)."""
    sessions = (default.measured or {}).get("sessions") or []
    return (doctor_seed(baseline, doctor_advice(sessions), dims)
            + greedy_path(baseline, ordered(segment), dims))


@contextmanager
def _stopped_by_signals(stop: threading.Event, received: list[int],
                        kept: str = "the steps done") -> Iterator[None]:
    """While the search runs: Ctrl-C, SIGTERM and SIGHUP go to `_interrupt` (each appended to
    `received`, for the exit status), third-party warnings are kept off the terminal; the
    handlers before are given back after, however it ends. `kept`: what a stop keeps, as
    the search counts it (greedy: steps; quick|exhaustive: trials)."""
    with interrupts_never_lost():
        previous = {sig: signal.signal(
            sig, lambda signum, _: _interrupt(stop, received, signum, kept))
            for sig in STOP_SIGNALS}
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                yield
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)


def _interrupt(stop: threading.Event, received: list[int], signum: int, kept: str) -> None:
    """The first signal only flags: the run in progress ends at its next request. A second
    stops at once (raised; one raised inside a callback that swallows it is delivered again,
    `interrupts_never_lost`)."""
    received.append(signum)
    if stop.is_set():
        raise Interrupted(signum)
    say_now(f"tune: {signal.Signals(signum).name}: ending the run in progress, keeping "
            f"{kept} (again: stop now)")
    stop.set()


def _replay_speed(workload, args) -> float | None:
    """`replay --speed` that offers --rate over the same first requests (their own rate is
    the trace's there, × speed)."""
    chosen = workload.trace.requests[:args.requests]
    span_s = (chosen[-1].timestamp_ms - chosen[0].timestamp_ms) / 1000 if chosen else 0.0
    if args.find_capacity or len(chosen) < 2 or span_s <= 0:
        return None
    return args.rate / ((len(chosen) - 1) / span_s)
