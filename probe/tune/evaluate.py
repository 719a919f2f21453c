"""One config measured for `tune`: a few warm open-loop replays at the rate (or a capacity
search) on fresh engines, every session saved. The same function runs here and, with
`tune --ray`, as a Ray task on a node (probe/tune/ray_steps.py): what it needs crosses as one
frozen `Job`, and what it measured comes back as `Measured`."""

from __future__ import annotations

import re
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from probe.bench.runs import RunContext
from probe.bench.spread import Spread
from probe.contract.options import OptConfig
from probe.tune.capacity import find_capacity
from probe.tune.rate_runs import rate_run, replay_at
from probe.tune.search import Measured

CAPACITY_RUNS = 5


@dataclass(frozen=True)
class Job:
    """What one config's measurement needs besides the model and the trace."""
    options: OptConfig
    label: str
    index: int                       # its place in the search: names its session files
    requests: int
    repeats: int
    trace_name: str
    rate: float | None               # goodput at this rate; None: capacity at the SLO
    start_rps: float | None = None   # capacity: where the search starts (the last one found)


def evaluate(job: Job, context: RunContext, workload, *, runs_dir: Path, named_dir: Path,
             stop: threading.Event, say: Callable[[str], None]) -> Measured:
    """Measure `job`'s config; each run's session is written to `runs_dir` and named in what
    comes back as `named_dir`/file (a Ray task writes in a temporary folder the driver copies
    into --out/runs)."""
    started = time.monotonic()
    label = job.label

    def one_run(rate: float, index: int):
        name = f"{index:02d}_{_slug(label)}_{rate:.4g}rps.json"
        data = replay_at(context, job.options, workload, rate=rate, requests=job.requests,
                         trace_name=job.trace_name, save_to=runs_dir / name, stop=stop)
        return data, rate_run(data, rate, named_dir / name)

    if job.rate is None:
        datas = []

        def measure(rate: float):
            say(f"{label}: {rate:.3g} req/s")
            data, run = one_run(rate, job.index)
            datas.append(data)
            return run
        from probe.bench.openloop import measure_capacity_rps
        start = job.start_rps or measure_capacity_rps(context, workload, 4)
        found = find_capacity(measure, start_rps=start, target=context.slo_target,
                              max_runs=CAPACITY_RUNS)
        low, high = found.bracket
        figure = (Spread(low, low, high if high is not None else low, 2) if low
                  else Spread(None, None, None, 0))
        at = next((i for i, r in enumerate(found.runs) if r.rate_rps == low), None)
        best = None if at is None else found.runs[at]
        # the table's p95 and drift are the run at capacity's (none: the first run's)
        shown = datas[at if at is not None else 0].segments() if datas else ()
        segment = shown[0] if shown else None
        say(f"{label}: {found.text()}")
        return Measured(
            figure, best.goodput_rps if best else None, best.slo_attainment if best else None,
            segment.latency_ms.p95 if segment else None, drift_of(segment),
            tuple(r.session for r in found.runs if r.session), segment, found.as_dict(),
            time.monotonic() - started)
    runs, segments = [], []
    for repeat in range(job.repeats):
        say(f"{label}: run {repeat + 1}/{job.repeats} at {job.rate:.3g} req/s, "
            f"{job.requests} requests")
        data, run = one_run(job.rate, job.index * 10 + repeat)
        runs.append(run)
        segments.extend(data.segments()[:1])
        if stop.is_set():
            break
    figure = Spread.of(r.goodput_rps for r in runs)
    attainment = Spread.of(r.slo_attainment for r in runs).median
    p95 = Spread.of(s.latency_ms.p95 for s in segments).median
    drifts = [d for d in (drift_of(s) for s in segments) if d is not None]
    say(f"{label}: goodput {figure.median if figure.median is not None else 0:.3g} req/s, "
        f"attainment {attainment if attainment is not None else 0:.0%}")
    return Measured(figure, figure.median, attainment, p95, max(drifts) if drifts else None,
                    tuple(r.session for r in runs if r.session),
                    segments[0] if segments else None, None, time.monotonic() - started)


def drift_of(segment) -> float | None:
    if segment is None or segment.drift is None:
        return None
    return 1.0 - segment.drift.token_agreement


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.=+-]+", "-", text).strip("-") or "config"
