"""The dashboard's first minute: measure what the engine serves one request at a time, then
replay at a rate it keeps up with, so the baseline is healthy and an optimization's effect can
be read (a saturated baseline hides every change behind a growing queue)."""

from __future__ import annotations

import time
from dataclasses import dataclass

from probe.engine.engine import Engine
from probe.engine.model.requests import EngineRequest
from workloads.trace_records import Trace

TARGET_LOAD = 0.5           # offered load as a fraction of the one-at-a-time capacity
# The part of the trace a user sees first, its minutes, not its first seconds: the built-in
# Azure conversation trace's first 50 requests arrive at 1.85 req/s with 99 output tokens on
# average, its next 450 at 3-7 req/s with 190-265, so a rate set on the first 50 offered three
# times the capacity a minute later (t5-tiny on a 2-core EPYC: 298%).
OPENING_REQUESTS = 500
TIMED_SAMPLES = 3
MIN_SPEED, MAX_SPEED = 0.125, 64.0


@dataclass(frozen=True)
class RateChoice:
    speed: float
    capacity_rps: float         # 1 / service time of a request of the opening's mean shape
    trace_rps: float            # the opening's arrival rate at speed 1
    opening_requests: int = OPENING_REQUESTS

    @property
    def load(self) -> float:
        return self.trace_rps * self.speed / self.capacity_rps

    def text(self) -> str:
        """Says over what the load is a mean: a live trace is quieter in some minutes and
        busier in others, and the panel's own figure reads the last 30 s (on the Azure
        trace, 11% 40 s in and 76% two minutes later, for a calibration at 50%)."""
        # the opening's span at speed 1 is its arrivals' gaps: (requests − 1) ÷ its rate
        opening_s = (self.opening_requests - 1) / self.trace_rps
        span = f", about {opening_s / self.speed / 60:.1f} min at this rate"
        return (f"rate ×{self.speed:.3g} → offered load {self.load:.0%} of the measured "
                f"capacity over the trace's first {self.opening_requests} requests{span} "
                f"({self.capacity_rps:.2f} req/s one at a time; the trace opens at "
                f"{self.trace_rps:.2f} req/s); + / - change it")


def opening(trace: Trace) -> tuple[float | None, int, int]:
    """(arrival rate, mean input length, mean output length) of the trace's first requests."""
    first = trace.requests[:OPENING_REQUESTS]
    span = (first[-1].timestamp_ms - first[0].timestamp_ms) / 1000.0 if len(first) > 1 else 0.0
    rate = (len(first) - 1) / span if span > 0 else None
    mean_in = round(sum(r.input_length for r in first) / len(first))
    mean_out = round(sum(r.output_length for r in first) / len(first))
    return rate, max(mean_in, 1), max(mean_out, 1)


def measure_capacity_rps(engine: Engine, input_length: int, output_length: int) -> float:
    """One over the median service time of requests of this shape, after one untimed warm-up.
    The requests are rehearsals: nothing is recorded."""
    def shaped(i: int) -> EngineRequest:
        return EngineRequest(id=f"calibrate-{i}", seq=-(1000 + i), input_length=input_length,
                             output_length=min(output_length, engine.settings.max_new_tokens),
                             arrival_s=engine.clock.now_s())
    engine.rehearse([shaped(0)])
    times = []
    for i in range(1, TIMED_SAMPLES + 1):
        start = time.perf_counter()
        engine.rehearse([shaped(i)])
        times.append(time.perf_counter() - start)
    return 1.0 / sorted(times)[len(times) // 2]


def choose_speed(engine: Engine, trace: Trace) -> RateChoice | None:
    """The replay speed that offers TARGET_LOAD of the capacity; None for a trace without a
    rate (all at once)."""
    rate, mean_in, mean_out = opening(trace)
    if rate is None:
        return None
    capacity = measure_capacity_rps(engine, mean_in, mean_out)
    speed = min(max(TARGET_LOAD * capacity / rate, MIN_SPEED), MAX_SPEED)
    return RateChoice(speed=speed, capacity_rps=capacity, trace_rps=rate,
                      opening_requests=len(trace.requests[:OPENING_REQUESTS]))
