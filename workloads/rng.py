"""Random draws that give the same numbers on every numpy version.

numpy promises a stable stream only for the bit generator and `random()` (uniform doubles);
its normal/gamma/exponential samplers may change between releases. So we draw uniforms from
PCG64 and do the transforms ourselves with Python's `math`: same seed, same bytes.
"""

from __future__ import annotations

import math

import numpy as np


class Draws:
    """Sequential draws from one stream; each sampler consumes uniforms in a fixed order."""

    def __init__(self, seed_sequence: np.random.SeedSequence) -> None:
        self._generator = np.random.Generator(np.random.PCG64(seed_sequence))
        self._buffer: list[float] = []

    def uniform(self) -> float:
        """A double in (0, 1): never exactly 0, so logs are finite."""
        while True:
            if not self._buffer:
                self._buffer = self._generator.random(256).tolist()
                self._buffer.reverse()
            value = self._buffer.pop()
            if value > 0.0:
                return value

    def exponential(self, mean: float) -> float:
        return -mean * math.log(self.uniform())

    def normal(self) -> float:
        """Box–Muller; the second variate is discarded to keep the consumption simple."""
        u1, u2 = self.uniform(), self.uniform()
        return math.sqrt(-2.0 * math.log(u1)) * math.cos(2.0 * math.pi * u2)

    def gamma(self, shape: float, scale: float) -> float:
        """Marsaglia–Tsang (2000); shape < 1 by the boost gamma(shape + 1) · U^(1/shape)."""
        if shape <= 0 or scale <= 0:
            raise ValueError("gamma needs shape > 0 and scale > 0")
        if shape < 1.0:
            return self.gamma(shape + 1.0, scale) * self.uniform() ** (1.0 / shape)
        d = shape - 1.0 / 3.0
        c = 1.0 / math.sqrt(9.0 * d)
        while True:
            z = self.normal()
            v = (1.0 + c * z) ** 3
            if v <= 0.0:
                continue
            if math.log(self.uniform()) < 0.5 * z * z + d - d * v + d * math.log(v):
                return d * v * scale


def streams(seed: int, count: int) -> list[Draws]:
    """Independent streams (arrivals, inputs, outputs...), so each is a prefix for smaller n."""
    return [Draws(child) for child in np.random.SeedSequence(seed).spawn(count)]
