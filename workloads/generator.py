"""The deterministic trace generator and the four workload profiles.

Where each number comes from is in README_section.md ("Profiles"): shapes follow published
trace analyses (log-normal-ish lengths, gamma inter-arrivals); magnitudes are chosen so a
t5-small-shaped model on a 2-core CPU (~15 ms/token eager) serves the default rate with a
visible but bounded queue.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path

from probe.common.errors import file_error
from workloads.arrivals import ArrivalProcess, GammaArrivals, OnOffBursts, Poisson, arrival_times_s
from workloads.lengths import LogNormal, Tracking
from workloads.rng import streams
from workloads.rows import MAX_SPAN_S
from workloads.trace import GENERATED_TRACES, builtin_path, write_trace
from workloads.trace_records import Trace, TraceRequest


@dataclass(frozen=True)
class Profile:
    name: str
    description: str
    arrivals: ArrivalProcess
    inputs: LogNormal
    outputs: LogNormal | Tracking
    default_rate_rps: float
    default_requests: int = 2000

    def describe(self) -> str:
        return (
            f"{self.name}: {self.description}; arrivals {self.arrivals.describe()} at "
            f"{self.default_rate_rps:g} rps; inputs {self.inputs.describe()}; outputs {self.outputs.describe()}"
        )


PROFILES: dict[str, Profile] = {
    "chat": Profile(
        name="chat",
        description="variable inputs, long outputs, interactive",
        arrivals=GammaArrivals(cv=1.5),
        inputs=LogNormal(median=80, sigma=1.0, low=4, high=512),
        outputs=LogNormal(median=48, sigma=0.7, low=8, high=256),
        default_rate_rps=0.5,
    ),
    "summarize": Profile(
        name="summarize",
        description="long inputs, medium outputs",
        arrivals=Poisson(),
        inputs=LogNormal(median=360, sigma=0.25, low=128, high=512),
        outputs=LogNormal(median=64, sigma=0.35, low=16, high=192),
        default_rate_rps=0.4,
    ),
    "translate": Profile(
        name="translate",
        description="moderate variability, output length tracking input length",
        arrivals=Poisson(),
        inputs=LogNormal(median=40, sigma=0.5, low=4, high=256),
        outputs=Tracking(ratio=1.15, sigma=0.15, low=2, high=256),
        default_rate_rps=0.5,
    ),
    "batch": Profile(
        name="batch",
        description="predictable lengths, arriving in bursts",
        arrivals=OnOffBursts(burst_size=32, within_gap_s=0.02),
        inputs=LogNormal(median=128, sigma=0.08, low=96, high=160),
        outputs=LogNormal(median=32, sigma=0.08, low=24, high=40),
        default_rate_rps=0.8,
    ),
}


def generate(profile: str, n: int, seed: int, rate: float | None = None) -> Trace:
    """`n` requests of `profile`; `rate` (rps) defaults to the profile's. Same seed, same trace.

    Arrivals, inputs and outputs use independent streams, so a smaller `n` gives a prefix.
    """
    chosen = PROFILES.get(profile)
    if chosen is None:
        raise file_error(f"--profile: unknown profile {profile!r} (choose from: {', '.join(PROFILES)})")
    if n <= 0:
        raise file_error(f"-n: must be a positive number of requests, got {n}")
    rate_rps = chosen.default_rate_rps if rate is None else rate
    if not (math.isfinite(rate_rps) and rate_rps > 0):
        raise file_error(f"--rate: must be a finite number > 0 requests per second, got {rate_rps:g}")
    if seed < 0:
        raise file_error(f"--seed: must be >= 0, got {seed}")
    arrival_draws, input_draws, output_draws = streams(seed, 3)
    try:
        times_s = arrival_times_s(chosen.arrivals, arrival_draws, n, rate_rps)
    except ValueError as exc:
        raise file_error(f"--rate: {exc}") from None
    if not times_s[-1] <= MAX_SPAN_S:  # also catches an overflow to inf or nan
        raise file_error(f"--rate {rate_rps:g} with -n {n}: the trace would span {times_s[-1]:.3g} s, "
                         f"above the {MAX_SPAN_S:g} s a trace may span; raise --rate or lower -n")
    requests = []
    for index, time_s in enumerate(times_s):
        input_length = chosen.inputs.sample(input_draws)
        if isinstance(chosen.outputs, Tracking):
            output_length = chosen.outputs.sample(output_draws, input_length)
        else:
            output_length = chosen.outputs.sample(output_draws)
        requests.append(TraceRequest(
            # Whole milliseconds: tools that read this format (AIPerf) want integer timestamps.
            timestamp_ms=float(round(time_s * 1000.0)),
            input_length=input_length,
            output_length=output_length,
            id=f"{profile}-{index:05d}",
            tag=profile,
        ))
    return Trace(name=profile, requests=tuple(requests), source=f"generated:{profile}:seed={seed}")


BUILTIN_SEED = 0


def write_builtin(folder: str | os.PathLike[str] | None = None) -> list[Path]:
    """(Re)write the four generated built-in traces with their defaults; returns the paths."""
    paths = []
    for name in GENERATED_TRACES:
        profile = PROFILES[name]
        target = builtin_path(name) if folder is None else Path(folder) / f"{name}.jsonl"
        write_trace(generate(name, profile.default_requests, BUILTIN_SEED), target)
        paths.append(target)
    return paths
