"""One config measured for `tune`: a few warm open-loop replays at the rate (or a capacity
search) on fresh engines, alternated run by run with the config it would replace, every
session saved. The same function runs here and, with `tune --ray`, as a Ray task on a node
(probe/tune/ray_pool.py): what it needs crosses as one frozen `Job`, and what it measured
comes back as `Measured`."""

from __future__ import annotations

import re
import threading
import time
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Callable

from probe.analysis.stats import session_segments
from probe.contract.options import OptConfig
from probe.contract.prepared_workload import PreparedWorkload
from probe.contract.session import SessionData
from probe.runs.capacity import Capacity, RateRun, capacity_search, interleave
from probe.runs.openloop import trace_capacity_rps
from probe.runs.rate_runs import rate_run, replay_at
from probe.runs.runs import RunContext
from probe.runs.spread import Spread
from probe.tune.confirm import ArmRun
from probe.tune.search import Measured
from probe.tune.tuned_settings import Setup, TunedSettings, served_settings
from workloads.buckets import plan_buckets

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
    control: OptConfig | None = None  # the config it would replace, rerun alternated beside it
    # --search quick|exhaustive: the bucket count, slots and window each side is served with
    settings: TunedSettings = TunedSettings()
    control_settings: TunedSettings = TunedSettings()


@dataclass
class _Side:
    """One config's runs within a step, as they come."""
    options: OptConfig
    label: str
    settings: TunedSettings = TunedSettings()
    runs: list[RateRun] = field(default_factory=list)
    datas: list[SessionData] = field(default_factory=list)


def evaluate(job: Job, context: RunContext, workload, *, runs_dir: Path, named_dir: Path,
             stop: threading.Event, say: Callable[[str], None]) -> Measured:
    """Measure `job`'s config — alternated run by run with its control when it has one, the
    control's figures coming back as the result's `control`; each run's session is written to
    `runs_dir` and named in what comes back as `named_dir`/file (a Ray task writes in a
    temporary folder the driver copies into --out/runs)."""
    started = time.monotonic()
    sides = [_Side(job.options, job.label, job.settings)]
    if job.control is not None:
        sides.append(_Side(job.control, f"current beside {job.label}", job.control_settings))

    def one_run(side: _Side, rate: float, index: int) -> RateRun:
        name = f"{index:02d}_{_slug(side.label)}_{rate:.4g}rps.json"
        data = replay_at(context, side.options, workload_for(workload, side.settings),
                         rate=rate, requests=job.requests, trace_name=job.trace_name,
                         save_to=runs_dir / name, stop=stop,
                         **served_settings(Setup(side.options, side.settings)))
        run = rate_run(data, rate, named_dir / name)
        side.datas.append(data)
        side.runs.append(run)
        return run

    if job.rate is None:
        start = job.start_rps or trace_capacity_rps(context, workload, 4)

        def at(side: _Side, rate: float) -> RateRun:
            say(f"{side.label}: {rate:.3g} req/s")
            return one_run(side, rate, job.index)
        # the control's search first: a candidate it may replace is measured after it, run
        # by run, so that neither has the machine's calmer minutes to itself
        ordered = sides[::-1]
        found = interleave([capacity_search(start_rps=start, target=context.slo_target,
                                            max_runs=CAPACITY_RUNS) for _ in ordered],
                           [partial(at, side) for side in ordered])[::-1]
        results = [_capacity_measured(side, capacity, say) for side, capacity in
                   zip(sides, found)]
    else:
        rate = job.rate
        for repeat in range(job.repeats):
            # ABBA: the control and the candidate swap places each repeat, so a machine
            # that slows steadily costs both alike
            turn = sides if repeat % 2 else sides[::-1]
            for side in turn:
                say(f"{side.label}: run {repeat + 1}/{job.repeats} at {rate:.3g} req/s, "
                    f"{job.requests} requests")
                one_run(side, rate, job.index * 10 + repeat)
                if stop.is_set():
                    break
            if stop.is_set():
                break
        results = [_rate_measured(side, say, slo=context.slo is not None) for side in sides]
    return replace(results[0], seconds=time.monotonic() - started,
                   control=results[1] if len(results) > 1 else None)


def _rate_measured(side: _Side, say: Callable[[str], None], *, slo: bool) -> Measured:
    figure = Spread.of(r.goodput_rps for r in side.runs)
    attainment = Spread.of(r.slo_attainment for r in side.runs).median
    segments = [s for data in side.datas for s in session_segments(data)[:1]]
    p95 = Spread.of(s.latency_ms.p95 for s in segments).median
    drifts = [d for d in (drift_of(s) for s in segments) if d is not None]
    if not slo:                     # no SLO: every request counts, nothing to attain
        say(f"{side.label}: {len(side.runs)} run(s) served; no SLO, so no goodput")
    elif figure.median is None:     # an SLO, but no run served over a span to divide by
        say(f"{side.label}: {len(side.runs)} run(s) served; no goodput (no run served "
            f"requests over a measurable span)")
    else:
        say(f"{side.label}: goodput {figure.median:.3g} req/s, attainment "
            f"{attainment if attainment is not None else 0:.0%}")
    return Measured(figure, figure.median, attainment, p95, max(drifts) if drifts else None,
                    tuple(r.session for r in side.runs if r.session),
                    segments[0] if segments else None, None)


def _capacity_measured(side: _Side, found: Capacity, say: Callable[[str], None]) -> Measured:
    low, high = found.bracket
    figure = (Spread(low, low, high if high is not None else low, 2) if low
              else Spread(None, None, None, 0))
    at = next((i for i, r in enumerate(found.runs) if r.rate_rps == low), None)
    best = None if at is None else found.runs[at]
    # the table's p95 and drift are the run at capacity's (none: the first run's)
    shown = session_segments(side.datas[at if at is not None else 0]) if side.datas else ()
    segment = shown[0] if shown else None
    say(f"{side.label}: {found.text()}")
    return Measured(
        figure, best.goodput_rps if best else None, best.slo_attainment if best else None,
        segment.latency_ms.p95 if segment else None, drift_of(segment),
        tuple(r.session for r in found.runs if r.session), segment, found.as_dict())


def arm_run(context: RunContext, workload: PreparedWorkload, setup: Setup, *, rate: float,
            requests: int, trace_name: str, save_to: Path, stop: threading.Event) -> ArmRun:
    """One replay of a --confirm arm at the rate, its session saved: goodput and p95."""
    data = replay_at(context, setup.options, workload_for(workload, setup.settings),
                     rate=rate, requests=requests, trace_name=trace_name, save_to=save_to,
                     stop=stop, **served_settings(setup))
    run = rate_run(data, rate, save_to)
    segments = session_segments(data)[:1]
    return ArmRun(run.goodput_rps, segments[0].latency_ms.p95 if segments else None,
                  str(save_to))


def workload_for(workload: PreparedWorkload, settings: TunedSettings) -> PreparedWorkload:
    """The workload with the planner's edges for the setting's bucket count (unset: as
    prepared, the planner's 4)."""
    k = settings.bucket_count
    if k is None:
        return workload
    edges = tuple(plan_buckets(workload.trace.input_lengths(), k).edges)
    return replace(workload, bucket_edges=edges, bucket_source=f"planner (K={k})")


def drift_of(segment) -> float | None:
    if segment is None or segment.drift is None:
        return None
    return 1.0 - segment.drift.token_agreement


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.=+-]+", "-", text).strip("-") or "config"
