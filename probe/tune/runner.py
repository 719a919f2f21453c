"""`infertop tune`'s run: load the model and the trace once, then let the search (search.py)
call `evaluate` per config — each a few warm open-loop replays at the rate (or a capacity
search) on fresh engines, every session saved — and write tune.json/tune.md after each step.
Ctrl-C or SIGTERM ends the run in progress (it is not counted) and keeps the steps done."""

from __future__ import annotations

import argparse
import re
import shlex
import signal
import sys
import threading
import time
import warnings
from pathlib import Path

from probe.bench.spread import Spread
from probe.contract.options import OptConfig
from probe.tune.candidates import ordered
from probe.tune.capacity import find_capacity
from probe.tune.rate_runs import rate_run, replay_at
from probe.tune.report import write_tune
from probe.tune.search import Measured, TuneState, run_tune

CAPACITY_RUNS = 5
MAX_INPUT = 512


def say(text: str) -> None:
    print(f"tune: {text}", file=sys.stderr, flush=True)


def run_tune_command(args: argparse.Namespace, baseline: OptConfig) -> int:
    import torch
    import transformers

    from probe.bench.openloop import measure_capacity_rps
    from probe.bench.runs import RunContext
    from probe.engine.models import load_model
    from probe.engine.observe.device_probe import resolve_device
    from probe.engine.workload_setup import prepare_workload

    workload = prepare_workload(args.trace)       # a bad trace is refused before any output
    transformers.logging.set_verbosity_error()   # only infertop speaks on the terminal
    if args.threads:
        torch.set_num_threads(args.threads)
    device = resolve_device(args.device)
    loaded = load_model(args.model)
    out = Path(args.out)
    (out / "runs").mkdir(parents=True, exist_ok=True)
    context = RunContext(model=args.model, device=str(device), loaded=loaded,
                         max_input=MAX_INPUT, repeats=args.repeats,
                         compile_backend=args.compile_backend, out_dir=out,
                         trace_info={"name": args.trace}, slo=args.slo,
                         slo_target=args.slo_target)
    stop = threading.Event()
    counter = iter(range(1, 10_000))
    state_rate: dict[str, float] = {}
    if not args.find_capacity:
        state_rate["rate"] = args.rate

    def one_run(options: OptConfig, label: str, rate: float, index: int) -> tuple:
        save = out / "runs" / f"{index:02d}_{_slug(label)}_{rate:.4g}rps.json"
        data = replay_at(context, options, workload, rate=rate, requests=args.requests,
                         trace_name=args.trace, save_to=save, stop=stop)
        return data, rate_run(data, rate, save)

    def evaluate(options: OptConfig, label: str) -> Measured:
        started = time.monotonic()
        index = next(counter)
        if args.find_capacity:
            datas = []

            def measure(rate: float):
                say(f"{label}: {rate:.3g} req/s")
                data, run = one_run(options, label, rate, index)
                datas.append(data)
                return run
            start = state_rate.get("rate") or measure_capacity_rps(context, workload, 4)
            found = find_capacity(measure, start_rps=start, target=args.slo_target,
                                  max_runs=CAPACITY_RUNS)
            if found.capacity_rps:
                state_rate["rate"] = found.capacity_rps
            low, high = found.bracket
            figure = (Spread(low, low, high if high is not None else low, 2) if low
                      else Spread(None, None, None, 0))
            at = next((i for i, r in enumerate(found.runs) if r.rate_rps == low), None)
            best = None if at is None else found.runs[at]
            # the table's p95 and drift are the run at capacity's (none: the first run's)
            shown = datas[at if at is not None else 0].segments()
            segment = shown[0] if shown else None
            measured = Measured(
                figure, best.goodput_rps if best else None,
                best.slo_attainment if best else None,
                segment.latency_ms.p95 if segment else None, _drift(segment),
                tuple(r.session for r in found.runs if r.session), segment,
                found.as_dict(), time.monotonic() - started)
            say(f"{label}: {found.text()}")
            return measured
        runs, segments = [], []
        for repeat in range(args.repeats):
            say(f"{label}: run {repeat + 1}/{args.repeats} at {args.rate:.3g} req/s, "
                f"{args.requests} requests")
            data, run = one_run(options, label, args.rate, index * 10 + repeat)
            runs.append(run)
            segments.extend(data.segments()[:1])
            if stop.is_set():
                break
        figure = Spread.of(r.goodput_rps for r in runs)
        attainment = Spread.of(r.slo_attainment for r in runs).median
        p95 = Spread.of(s.latency_ms.p95 for s in segments).median
        drifts = [d for d in (_drift(s) for s in segments) if d is not None]
        measured = Measured(figure, figure.median, attainment, p95,
                            max(drifts) if drifts else None,
                            tuple(r.session for r in runs if r.session),
                            segments[0] if segments else None, None,
                            time.monotonic() - started)
        say(f"{label}: goodput {figure.median if figure.median is not None else 0:.3g} req/s, "
            f"attainment {attainment if attainment is not None else 0:.0%}")
        return measured

    command = "infertop " + " ".join(shlex.quote(a) for a in sys.argv[1:])
    report = dict(slo=args.slo, target=args.slo_target, capacity=args.find_capacity,
                  settings={"model": args.model, "trace": args.trace, "device": str(device),
                            "requests": args.requests, "repeats": args.repeats,
                            "budget_min": args.budget, "max_drift": args.max_drift,
                            "command": command, "baseline": baseline.as_dict(),
                            "replay_speed": _replay_speed(workload, args)})

    latest: list[TuneState] = [TuneState(final=baseline)]

    def on_step(step, state: TuneState) -> None:
        latest[0] = state
        verdict = "kept" if step.kept else ("skipped" if step.measured is None else "dropped")
        say(f"{step.change}: {verdict}: {step.why}")
        write_tune(out, state, rate_rps=state_rate.get("rate"), done=False, **report)

    previous = {sig: signal.signal(sig, lambda *_: _interrupt(stop))
                for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            state = run_tune(baseline, evaluate, ordered, capacity=args.find_capacity,
                             max_drift=args.max_drift, budget_s=args.budget * 60, stop=stop,
                             on_step=on_step)
    except KeyboardInterrupt:          # a second Ctrl-C/SIGTERM: now, with the steps done
        state = latest[0]
        state.stopped = "interrupted"
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    write_tune(out, state, rate_rps=state_rate.get("rate"), done=not stop.is_set(), **report)
    print(f"wrote {out / 'tune.md'} and {out / 'tune.json'}: chosen {state.final.label()}")
    return 130 if stop.is_set() else 0


def _interrupt(stop: threading.Event) -> None:
    """The first signal ends the run in progress at its next request; a second, at once."""
    if stop.is_set():
        raise KeyboardInterrupt
    say("interrupted: ending the run in progress, keeping the steps done (again: stop now)")
    stop.set()


def _replay_speed(workload, args) -> float | None:
    """`replay --speed` that offers --rate over the same first requests (their own rate is
    the trace's there, × speed)."""
    chosen = workload.trace.requests[:args.requests]
    span_s = (chosen[-1].timestamp_ms - chosen[0].timestamp_ms) / 1000 if chosen else 0.0
    if args.find_capacity or len(chosen) < 2 or span_s <= 0:
        return None
    return args.rate / ((len(chosen) - 1) / span_s)


def _drift(segment) -> float | None:
    if segment is None or segment.drift is None:
        return None
    return 1.0 - segment.drift.token_agreement


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.=+-]+", "-", text).strip("-") or "config"
