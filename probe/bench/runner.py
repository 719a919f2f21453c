"""`infertop bench`: validate the model and the trace, then create DIR, run the study and
write report.json, report.md and a snapshot per run into it."""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from probe.bench.plan import MAX_INPUT, BenchSettings, make_plan
from probe.bench.progress import StatusLine
from probe.bench.report import report_document, write_report
from probe.bench.results import RunResult
from probe.bench.runs import RunContext
from probe.bench.study import Study
from probe.bench.torch_trace import TlparseReport, TorchTrace, TraceFolder, run_tlparse
from probe.bench.verdict import speed_drift
from probe.contract.errors import ConfigError


def run_bench(args: argparse.Namespace) -> int:
    started = time.perf_counter()
    settings = BenchSettings.from_args(args)
    if settings.ray is not None:
        from probe.bench.ray_executor import run_on_ray
        return run_on_ray(settings, started)
    if settings.matrix:
        raise ConfigError("a list of models or traces is a matrix of studies, spread with "
                          "--ray (`--ray local` runs it on this machine)")
    import torch

    from probe.bench.experiments.roofline import measure_machine
    from probe.engine.device_probe import resolve_device
    from probe.engine.models import load_model

    if settings.threads:
        torch.set_num_threads(settings.threads)
    device = resolve_device(settings.device)
    loaded = load_model(settings.model)
    study = prepare_study(settings, str(device), loaded)
    out = settings.out
    out.mkdir(parents=True, exist_ok=True)      # only now: the model and trace are good
    environment = bench_environment(device)
    if {"roofline", "peers"} & set(settings.experiments):
        print("measuring memory bandwidth and GEMM throughput for the roofline…", file=sys.stderr)
        environment["roofline"] = measure_machine(loaded, device)
    torch_trace = TorchTrace(out / "torch_trace") if settings.torch_trace else None
    if torch_trace:
        study.after_engine = torch_trace.attach
    progress = study.progress()
    with measuring(progress, torch_trace) as stop:
        study.run(progress, environment)
    environment["load_average_end"] = load_average()
    environment.update(calibration_spread(study))
    tlparse = run_tlparse(torch_trace.logs(), out) if torch_trace else None
    report = report_document(settings, study.plan, environment, study,
                             interrupted=stop.interrupted,
                             wall_s=time.perf_counter() - started, torch_trace=torch_trace,
                             tlparse=tlparse)
    write_report(out, report)
    print_written(out, study, report, torch_trace, tlparse)
    return 130 if stop.interrupted else 0


def prepare_study(settings: BenchSettings, device: str, loaded: object) -> Study:
    """The plan (the trace is loaded and fitted here: a bad one is refused) and every run of
    one (model, trace) study."""
    from probe.bench.profile import PROFILE
    plan = make_plan(model=settings.model, trace_name=settings.trace, device=device,
                     quick=settings.quick, requests=settings.requests,
                     bucket_count=settings.bucket_count, seed=settings.seed,
                     e5_count=settings.e5_count)
    context = RunContext(model=settings.model, device=device, loaded=loaded,
                         max_input=MAX_INPUT, repeats=settings.repeats,
                         out_dir=settings.out,
                         compile_backend=settings.compile_backend,
                         trace_info={"name": settings.trace, "seed": settings.seed},
                         keep_tokens=settings.tokens)
    return Study.of(plan, settings.experiments, context,
                    profile=PROFILE if settings.profile else None)


def print_written(out: Path, study: Study, report: dict, torch_trace: TraceFolder | None,
                  tlparse: list[TlparseReport] | None) -> None:
    failed = [k for k, r in study.results.items() if not isinstance(r, RunResult)]
    print(f"wrote {out / 'report.md'} and {out / 'report.json'} "
          f"({len(study.results)} runs, {len(failed)} failed) in {report['wall_s']:.0f} s")
    for log_file in torch_trace.logs() if torch_trace else ():
        print(f"TORCH_TRACE log: {log_file} (read it with: tlparse {log_file})")
    for made in tlparse or ():
        print(f"tlparse report: {out / made.html}" if made.html
              else f"tlparse {made.log} failed: {made.error}")


@dataclass
class Stop:
    interrupted: bool = False


@contextmanager
def measuring(progress: StatusLine, torch_trace: TorchTrace | None) -> Iterator[Stop]:
    """Warnings muted (torch and transformers warn about their own internals while compiling;
    none of it changes a measurement, and it would bury the progress line), Ctrl-C turned into
    a report of what finished, and the progress line and the trace log closed either way."""
    stop = Stop()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            yield stop
        except KeyboardInterrupt:
            stop.interrupted = True
            progress.message("interrupted: writing the report of the runs that finished")
        finally:
            progress.close()
            if torch_trace:
                torch_trace.close()


def bench_environment(device) -> dict:
    import torch

    from probe.contract.snapshot import environment
    env = environment(device)
    try:
        import torch._inductor.config as inductor_config
        env["inductor_fx_graph_cache"] = bool(inductor_config.fx_graph_cache)
    except Exception:  # an older torch: leave it out
        pass
    env["inductor_cache_dir"] = os.environ.get("TORCHINDUCTOR_CACHE_DIR", "default")
    env["torch_threads"] = torch.get_num_threads()
    env["load_average_start"] = load_average()
    env["device"] = str(device)
    return env


def load_average() -> list[float] | None:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


def calibration_spread(study: Study) -> dict:
    """How far the machine's speed moved over the whole study (the calibration workload)."""
    values = [v for r in study.results.values() if isinstance(r, RunResult)
              for v in r.calibration_ms if v]
    if not values:
        return {}
    return {"calibration_ms": {"min": min(values), "max": max(values),
                               "drift": speed_drift(values)}}
