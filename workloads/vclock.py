"""Trace time that runs at `speed` × real time, stops while paused, and never jumps.

The history is kept as segments (real start, virtual start, rate), rate 0 while paused, so the
real moment at which any virtual instant was (or will be) reached can be answered even after a
later speed change: a request that fell due before the change keeps its due time.
Not thread-safe by itself; the replayer holds a lock around it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class _Segment:
    real_start: float
    virtual_start: float
    rate: float  # virtual seconds per real second; 0 while paused


class VirtualClock:
    def __init__(self, real_now: float, speed: float = 1.0, *, paused: bool = False) -> None:
        _check_speed(speed)
        self._speed = speed
        self._segments = [_Segment(real_now, 0.0, 0.0 if paused else speed)]

    @property
    def paused(self) -> bool:
        return self._segments[-1].rate == 0.0

    def virtual_at(self, real: float) -> float:
        """Virtual time now (for `real` >= the last change)."""
        last = self._segments[-1]
        return last.virtual_start + max(0.0, real - last.real_start) * last.rate

    def real_at(self, virtual: float) -> float | None:
        """The first real moment the running clock reached `virtual`; None while paused short of it.

        An instant is reached only while running: with a pause at the very start, virtual 0 is
        reached on resume; an instant equal to where a pause began was reached before it.
        """
        segments = self._segments
        for index, segment in enumerate(segments):
            last = index == len(segments) - 1
            if segment.rate > 0.0:
                end = math.inf if last else segments[index + 1].virtual_start
                if virtual <= end:
                    return segment.real_start + max(0.0, virtual - segment.virtual_start) / segment.rate
            elif last:
                return None
        return None  # unreachable: the last segment either runs forever or is paused

    def set_speed(self, real_now: float, speed: float) -> None:
        _check_speed(speed)
        self._speed = speed
        if not self.paused:
            self._start_segment(real_now, speed)

    def pause(self, real_now: float) -> None:
        if not self.paused:
            self._start_segment(real_now, 0.0)

    def resume(self, real_now: float) -> None:
        if self.paused:
            self._start_segment(real_now, self._speed)

    def forget_before(self, virtual: float) -> None:
        """Drop history that no instant >= `virtual` can need (keeps the list short)."""
        drop = 0
        while drop + 1 < len(self._segments) and self._segments[drop + 1].virtual_start < virtual:
            drop += 1
        del self._segments[:drop]

    def _start_segment(self, real_now: float, rate: float) -> None:
        virtual_now = self.virtual_at(real_now)
        self._segments.append(_Segment(max(real_now, self._segments[-1].real_start), virtual_now, rate))


def _check_speed(speed: float) -> None:
    if not speed > 0.0:
        raise ValueError(f"speed must be > 0, got {speed!r}")
