"""Arrival processes: each turns a mean rate into gaps between requests, in seconds."""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Protocol

from workloads.rng import Draws


class ArrivalProcess(Protocol):
    def describe(self) -> str: ...
    def gaps_s(self, draws: Draws, count: int, rate_rps: float) -> list[float]: ...


@dataclass(frozen=True)
class Poisson:
    """Independent arrivals: exponential gaps, coefficient of variation 1."""

    def describe(self) -> str:
        return "Poisson"

    def gaps_s(self, draws: Draws, count: int, rate_rps: float) -> list[float]:
        return [draws.exponential(1.0 / rate_rps) for _ in range(count)]


@dataclass(frozen=True)
class GammaArrivals:
    """Gamma-distributed gaps; `cv` is the burstiness knob (1 = Poisson, >1 burstier)."""

    cv: float

    def describe(self) -> str:
        return f"gamma gaps, CV {self.cv:g}"

    def gaps_s(self, draws: Draws, count: int, rate_rps: float) -> list[float]:
        shape = 1.0 / (self.cv * self.cv)
        scale = 1.0 / (rate_rps * shape)  # mean gap = shape * scale = 1 / rate
        return [draws.gamma(shape, scale) for _ in range(count)]


@dataclass(frozen=True)
class OnOffBursts:
    """Bursts of `burst_size` requests `within_gap_s` apart (mean), separated by idle periods.

    The idle periods are exponential with the mean that makes the long-run rate `rate_rps`.
    """

    burst_size: int
    within_gap_s: float

    def describe(self) -> str:
        return f"on/off bursts of {self.burst_size}, ~{self.within_gap_s * 1000:g} ms apart"

    def gaps_s(self, draws: Draws, count: int, rate_rps: float) -> list[float]:
        cycle_s = self.burst_size / rate_rps
        busy_s = (self.burst_size - 1) * self.within_gap_s
        if cycle_s <= busy_s:
            raise ValueError(
                f"rate {rate_rps:g} rps is too high for bursts of {self.burst_size} "
                f"{self.within_gap_s * 1000:g} ms apart"
            )
        off_mean_s = cycle_s - busy_s
        gaps = []
        for index in range(count):
            if index % self.burst_size == 0:
                gaps.append(draws.exponential(off_mean_s))
            else:
                gaps.append(draws.exponential(self.within_gap_s))
        return gaps


def arrival_times_s(process: ArrivalProcess, draws: Draws, count: int, rate_rps: float) -> list[float]:
    """Cumulative arrival times; the first request arrives at 0."""
    if rate_rps <= 0:
        raise ValueError("rate must be > 0")
    gaps = process.gaps_s(draws, count, rate_rps)
    return list(itertools.accumulate(gaps[1:], initial=0.0))[:count]
