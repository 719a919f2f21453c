"""The dashboard's first minute and after: measure what the engine serves one request at a
time, then replay at a rate it keeps up with, so the baseline is healthy and an optimization's
effect can be read (a saturated baseline hides every change behind a growing queue); and hold
that load while the machine's speed moves under the run.

The rate is one factor (`speed`, what `+`/`-` and the status bar speak): a slower trace clock
and, below the clock's floor, a share of the arrivals kept (workloads/thinning.py), so that
half the capacity is reachable on a busy machine too. Capacity is the one definition,
`steady_state.capacity_from_service_s`: 1 ÷ the mean service time."""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Callable, Sequence

from probe.analysis.steady_state import capacity_from_service_s, capacity_rps
from probe.contract.records import RequestRecord
from probe.engine.engine import Engine
from probe.engine.model.requests import EngineRequest
from workloads.thinning import MIN_FACTOR, bounded_factor, factor_text
from workloads.trace_records import Trace

TARGET_LOAD = 0.5           # offered load as a fraction of the one-at-a-time capacity
# The part of the trace a user sees first, its minutes, not its first seconds: the built-in
# Azure conversation trace's first 50 requests arrive at 1.85 req/s with 99 output tokens on
# average, its next 450 at 3-7 req/s with 190-265, so a rate set on the first 50 offered three
# times the capacity a minute later (t5-tiny on a 2-core EPYC: 298%).
OPENING_REQUESTS = 500
TIMED_SAMPLES = 3
# Under the run: the capacity is read again over each RECHECK_REQUESTS warm requests of the
# config the rate was set on, and a reading RECHECK_RATIO off the one the rate stands on sets
# the rate again (other processes took the cores, or gave them back).
RECHECK_REQUESTS = 16
RECHECK_RATIO = 1.5


@dataclass(frozen=True)
class RateChoice:
    speed: float                # the rate factor: clock speed × share of arrivals kept
    capacity_rps: float         # 1 / mean service time of requests of the opening's mean shape
    trace_rps: float            # the opening's arrival rate at speed 1
    opening_requests: int = OPENING_REQUESTS

    @property
    def load(self) -> float:
        return self.trace_rps * self.speed / self.capacity_rps

    @property
    def at_floor(self) -> bool:
        """The slowest rate a replay offers still offers more than the target."""
        return self.speed <= MIN_FACTOR and self.load > TARGET_LOAD * 1.05

    def text(self) -> str:
        """Says over what the load is a mean: a live trace is quieter in some minutes and
        busier in others, and the panel's own figure reads the last 30 s (on the Azure
        trace, 11% 40 s in and 76% two minutes later, for a calibration at 50%)."""
        # the opening's span at speed 1 is its arrivals' gaps: (requests − 1) ÷ its rate
        opening_s = (self.opening_requests - 1) / self.trace_rps
        span = f", about {opening_s / self.speed / 60:.1f} min at this rate"
        return (f"rate {factor_text(self.speed)} → offered load {self.load:.0%} of the "
                f"measured capacity over the trace's first {self.opening_requests} requests"
                f"{span} ({self.capacity_rps:.2f} req/s one at a time; the trace opens at "
                f"{self.trace_rps:.2f} req/s); + / - change it")


def opening(trace: Trace) -> tuple[float | None, int, int]:
    """(arrival rate, mean input length, mean output length) of the trace's first requests."""
    first = trace.requests[:OPENING_REQUESTS]
    span = (first[-1].timestamp_ms - first[0].timestamp_ms) / 1000.0 if len(first) > 1 else 0.0
    rate = (len(first) - 1) / span if span > 0 else None
    mean_in = round(sum(r.input_length for r in first) / len(first))
    mean_out = round(sum(r.output_length for r in first) / len(first))
    return rate, max(mean_in, 1), max(mean_out, 1)


def rehearsed_capacity_rps(engine: Engine, requests: Sequence[EngineRequest], *,
                           timer: Callable[[], float] = time.perf_counter) -> float | None:
    """The engine's capacity (1 ÷ mean service time) over `requests[1:]`, each served alone
    after `requests[0]` as an untimed warm-up. Rehearsals: nothing is recorded. One that
    compiled (a shape the warm-up did not have) is left out, as the records' capacity leaves
    out a compile stall; None when every one did."""
    engine.rehearse([requests[0]])
    times = []
    for request in requests[1:]:
        compiled_before = engine.probe.compile_seconds
        start = timer()
        engine.rehearse([request])
        elapsed = timer() - start
        if engine.probe.compile_seconds <= compiled_before:
            times.append(elapsed)
    return capacity_from_service_s(times)


def measure_opening_capacity(engine: Engine, input_length: int, output_length: int
                             ) -> float | None:
    """The capacity for requests of the opening's mean shape."""
    def shaped(i: int) -> EngineRequest:
        return EngineRequest(id=f"calibrate-{i}", seq=-(1000 + i), input_length=input_length,
                             output_length=min(output_length, engine.settings.max_new_tokens),
                             arrival_s=engine.clock.now_s())
    return rehearsed_capacity_rps(engine, [shaped(i) for i in range(TIMED_SAMPLES + 1)])


def rate_choice(trace: Trace, capacity: float) -> RateChoice | None:
    """The rate factor that offers TARGET_LOAD of `capacity` over the trace's opening; None
    for a trace without a rate (all at once)."""
    rate, _, _ = opening(trace)
    if rate is None:
        return None
    return RateChoice(speed=bounded_factor(TARGET_LOAD * capacity / rate), capacity_rps=capacity,
                      trace_rps=rate, opening_requests=len(trace.requests[:OPENING_REQUESTS]))


def choose_speed(engine: Engine, trace: Trace) -> RateChoice | None:
    """Measure, then choose (rate_choice); None for a trace without a rate."""
    rate, mean_in, mean_out = opening(trace)
    if rate is None:
        return None
    capacity = measure_opening_capacity(engine, mean_in, mean_out)
    if capacity is None:
        raise RuntimeError("every rehearsal compiled: no warm service time to measure")
    return rate_choice(trace, capacity)


@dataclass(frozen=True)
class RateChange:
    before: RateChoice
    after: RateChoice
    reading_rps: float          # the capacity the last warm requests read
    reference_rps: float        # the one the rate was set on

    def text(self) -> str:
        change = self.reading_rps / self.reference_rps - 1.0
        return (f"the engine's capacity moved under the run: its last {RECHECK_REQUESTS} warm "
                f"requests read {self.reading_rps:.2f} req/s, {change:+.0%} against the "
                f"{self.reference_rps:.2f} the rate was set on (other processes took or gave "
                f"back cores, or the trace's requests changed length): rate "
                f"{factor_text(self.before.speed)} → {factor_text(self.after.speed)}, to offer "
                f"{self.after.load:.0%} again; + / - set the rate yourself and end these "
                f"re-checks")


@dataclass
class RateWatch:
    """Holds the calibrated load under the run: the served records of the config the rate was
    set on, read in windows of RECHECK_REQUESTS warm requests, each against the capacity the
    rate stands on (first the calibration's own, measured on requests of the opening's mean
    shape: a calibration taken in a quiet second of a busy machine is caught by the first
    window). A window RECHECK_RATIO off sets the rate again to offer TARGET_LOAD of what it
    read, which the rate then stands on. Stops for good when the user sets the rate or the
    config changes: from then on a moving queue is theirs to read."""
    choice: RateChoice
    config_id: str
    since_seq: int = 0
    stopped: bool = False

    def user_set_rate(self) -> None:
        self.stopped = True

    def check(self, records: Sequence[RequestRecord], config_id: str) -> RateChange | None:
        if self.stopped:
            return None
        if config_id != self.config_id:
            self.stopped = True
            return None
        window = [r for r in records if r.seq >= self.since_seq and r.config_id == config_id
                  and r.ok and r.compile_stall_ms <= 0]
        if len(window) < RECHECK_REQUESTS:
            return None
        window = sorted(window, key=lambda r: r.seq)[:RECHECK_REQUESTS]
        reading = capacity_rps(window)
        self.since_seq = window[-1].seq + 1
        reference = self.choice.capacity_rps
        if reading is None or 1 / RECHECK_RATIO < reading / reference < RECHECK_RATIO:
            return None
        after = replace(self.choice, capacity_rps=reading,
                        speed=bounded_factor(TARGET_LOAD * reading / self.choice.trace_rps))
        change = RateChange(self.choice, after, reading, reference)
        self.choice = after
        return change if after.speed != change.before.speed else None
