"""Token-length distributions for the generator."""

from __future__ import annotations

import math
from dataclasses import dataclass

from workloads.rng import Draws


@dataclass(frozen=True)
class LogNormal:
    """Log-normal with the given median and log-space sigma, truncated to [low, high].

    Truncation redraws (it does not clip), so no spike of requests sits at `high`.
    """

    median: float
    sigma: float
    low: int
    high: int

    def describe(self) -> str:
        return f"log-normal, median {self.median:g}, sigma {self.sigma:g}, within [{self.low}, {self.high}]"

    def sample(self, draws: Draws) -> int:
        mu = math.log(self.median)
        while True:
            value = int(math.floor(math.exp(mu + self.sigma * draws.normal()) + 0.5))
            if self.low <= value <= self.high:
                return value


@dataclass(frozen=True)
class Tracking:
    """Output length that follows the input: input × ratio × log-normal noise (median 1)."""

    ratio: float
    sigma: float
    low: int
    high: int

    def describe(self) -> str:
        return f"input × {self.ratio:g} × log-normal noise (sigma {self.sigma:g}), within [{self.low}, {self.high}]"

    def sample(self, draws: Draws, input_length: int) -> int:
        while True:
            value = int(math.floor(input_length * self.ratio * math.exp(self.sigma * draws.normal()) + 0.5))
            if self.low <= value <= self.high:
                return value
