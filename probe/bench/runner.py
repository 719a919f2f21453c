"""`infertop bench`: validate the model and the trace, then create DIR, run the study and
write report.json, report.md and a snapshot per run into it."""

from __future__ import annotations

import argparse
import sys
import time
from contextlib import nullcontext
from pathlib import Path

from probe.bench.compile_history import CompileHistory
from probe.bench.experiments import measures_machine, select_experiments
from probe.bench.experiments.roofline import measure_machine
from probe.bench.ray_executor import run_on_ray
from probe.bench.report import write_study_report
from probe.bench.study_setup import (
    bench_environment,
    calibration_spread,
    load_average,
    measuring,
    prepare_study,
)
from probe.bench.torch_trace import TorchTrace
from probe.checks.interrupts import WRITING_REPORT, StopSignals, exit_status, stop_signals
from probe.common.errors import BadInput
from probe.runs.plan import BenchSettings


def run_bench(args: argparse.Namespace, stops: StopSignals | None = None) -> int:
    """The study; `stops`: the command's one handler of the stop signals, installed before
    torch is imported (none: one of its own)."""
    with nullcontext(stops) if stops is not None else stop_signals(WRITING_REPORT) as signals:
        return _run_bench(args, signals)


def _run_bench(args: argparse.Namespace, stops: StopSignals) -> int:
    started = time.perf_counter()
    settings = BenchSettings.from_args(args, select_experiments(args.experiments))
    if settings.ray is not None:
        status = run_on_ray(settings, started, stops)
        return status or (exit_status(stops.received[0]) if stops.received else 0)
    if settings.matrix:
        raise BadInput("a list of models or traces is a matrix of studies, spread with "
                          "--ray (`--ray local` runs it on this machine)")
    # a stop from here to the output folder: 128 + the signal, nothing written (the study
    # had not begun); from the folder on, every stop writes the report
    import torch

    from probe.engine.compile_cache import share_inductor_cache
    from probe.engine.model.loading import load_model
    from probe.engine.observe.device_probe import resolve_device

    if settings.threads:
        torch.set_num_threads(settings.threads)
    cache = Path(share_inductor_cache())    # compile once: every run and the next study
    device = resolve_device(settings.device)
    loaded = load_model(settings.model)
    study = prepare_study(settings, str(device), loaded)
    study.history = CompileHistory(cache, model=settings.model, device=str(device),
                                   backend=settings.compile_backend)
    out = settings.out
    progress = study.progress()
    environment: dict = {"device": str(device)}
    torch_trace: TorchTrace | None = None
    stops.armed = False     # a signal until `measuring` only flags; checked first thing there
    out.mkdir(parents=True, exist_ok=True)      # only now: the model and trace are good
    with measuring(progress, None, stops) as stop:
        stops.check()
        environment.update(bench_environment(device))
        if measures_machine(settings.experiments):
            print("measuring memory bandwidth and GEMM throughput for the roofline…",
                  file=sys.stderr)
            environment["roofline"] = measure_machine(loaded, device)
        if settings.torch_trace:
            torch_trace = TorchTrace(out / "torch_trace")
            study.after_engine = torch_trace.attach
        try:
            study.run(progress, environment, check=stops.check)
        finally:
            if torch_trace:
                torch_trace.close()
    # disarmed: a signal while the report is written only waits for it
    environment["load_average_end"] = load_average()
    environment.update(calibration_spread(study))
    write_study_report(settings, study, environment, torch_trace, interrupted=stop.interrupted,
                       started=started)
    return stop.exit_status or (exit_status(stops.received[0]) if stops.received else 0)
