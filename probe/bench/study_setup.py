"""What a bench study needs around its runs, on this machine or on a Ray node: the study
prepared from the settings, the machine's environment, the measuring context (warnings muted,
Ctrl-C turned into a report), the calibration's spread and the closing lines. Shared by the
local runner and the Ray executor, which therefore do not import each other."""

from __future__ import annotations

import os
import signal
import warnings
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Iterator

from probe.bench.profile import PROFILE
from probe.bench.progress import StatusLine
from probe.bench.study import Study
from probe.bench.torch_trace import TlparseReport, TorchTrace, TraceFolder
from probe.checks.interrupts import (
    WRITING_REPORT,
    StopSignals,
    exit_status,
    signal_of,
    stop_signals,
)
from probe.engine.process.environment import environment
from probe.runs.plan import MAX_INPUT, BenchSettings, make_plan
from probe.runs.results import RunResult
from probe.runs.runs import RunContext
from probe.runs.stopping import SEQUENTIAL
from probe.runs.verdict import speed_drift

if TYPE_CHECKING:
    from probe.engine.model.loading import LoadedModel


def prepare_study(settings: BenchSettings, device: str, loaded: LoadedModel | None) -> Study:
    """The plan (the trace is loaded and fitted here: a bad one is refused) and every run of
    one (model, trace) study."""
    plan = make_plan(model=settings.model, trace_name=settings.trace, device=device,
                     quick=settings.quick, requests=settings.requests,
                     bucket_count=settings.bucket_count, seed=settings.seed)
    context = RunContext(model=settings.model, device=device, loaded=loaded,
                         max_input=MAX_INPUT, repeats=settings.repeats,
                         out_dir=settings.out,
                         compile_backend=settings.compile_backend,
                         trace_info={"name": settings.trace, "seed": settings.seed},
                         keep_tokens=settings.tokens, slo=settings.slo,
                         slo_target=settings.slo_target, stopping=settings.stopping,
                         short_warmup=settings.stopping == SEQUENTIAL)
    return Study.of(plan, settings.experiments, context,
                    profile=PROFILE if settings.profile else None)


def print_written(out: Path, study: Study, report: dict, torch_trace: TraceFolder | None,
                  tlparse: list[TlparseReport] | None) -> None:
    failed = [k for k, r in study.results.items() if not isinstance(r, RunResult)]
    # the open-loop experiments' runs too (E7, E8: each a replay at a rate)
    open_loop = sum(len(results.get("runs") or {}) for results, _ in study.open_loop.values()
                    if isinstance(results, dict) and isinstance(results.get("runs"), dict))
    print(f"wrote {out / 'report.md'} and {out / 'report.json'} "
          f"({len(study.results) + open_loop} runs, {len(failed)} failed) in "
          f"{report['wall_s']:.0f} s")
    charts = (report.get("files") or {}).get("figures") or {}
    if charts.get("figures"):
        print(f"wrote {out / 'report.html'} and {len(charts['figures'])} charts in "
              f"{out / 'figures'}")
    for log_file in torch_trace.logs() if torch_trace else ():
        print(f"TORCH_TRACE log: {log_file} (read it with: tlparse {log_file})")
    for made in tlparse or ():
        print(f"tlparse report: {out / made.html}" if made.html
              else f"tlparse {made.log} failed: {made.error}")


@dataclass
class Stop:
    interrupted: bool = False
    signum: int = signal.SIGINT

    @property
    def exit_status(self) -> int:
        """0, or 128 + the signal that stopped the study (130 Ctrl-C, 143 SIGTERM, 129 SIGHUP)."""
        return exit_status(self.signum) if self.interrupted else 0


@contextmanager
def measuring(progress: StatusLine, torch_trace: TorchTrace | None,
              stops: StopSignals | None = None) -> Iterator[Stop]:
    """Warnings muted (torch and transformers warn about their own internals while compiling;
    none of it changes a measurement, and it would bury the progress line), Ctrl-C, SIGTERM
    and SIGHUP turned into a report of what finished, and the progress line and the trace log
    closed either way. `stops`: the run's one handler (`stop_signals`), armed here and
    disarmed on the way out, so that a signal while the report is written only waits (none:
    one of its own, for the duration)."""
    stop = Stop()
    with warnings.catch_warnings(), \
            (nullcontext(stops) if stops is not None else stop_signals(WRITING_REPORT)) as signals:
        warnings.simplefilter("ignore")
        signals.armed = True
        try:
            yield stop
        except KeyboardInterrupt as exc:
            signals.armed, signals.taken = False, True
            stop.interrupted, stop.signum = True, signal_of(exc)
            progress.message("interrupted: writing the report of the runs that finished")
        finally:
            signals.armed = False
            progress.close()
            if torch_trace:
                torch_trace.close()
        if signals.signum is not None and not stop.interrupted:    # its raise was swallowed
            stop.interrupted, stop.signum = True, signals.signum


def bench_environment(device) -> dict:
    import torch

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
