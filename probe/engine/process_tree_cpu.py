"""The CPU the engine costs: its own process and every process it started (inductor's compile
workers, the C++ compiler they run). psutil's `Process.cpu_percent` counts one process only, so
while a compile runs g++ on both cores the engine read "0% of a core" on a machine at 100%; psutil
has no tree-wide figure, hence this one."""

from __future__ import annotations

import time

import psutil


def tree_cpu_seconds(process: psutil.Process) -> float:
    """CPU seconds spent by `process` and its descendants, living or ended. Each second is counted
    once: a living process by its own user+system time, an ended one inside the children time of
    the process that reaped it (the kernel adds a reaped child's whole tree there)."""
    total = 0.0
    try:
        descendants = process.children(recursive=True)
    except psutil.Error:
        descendants = []
    for member in (process, *descendants):
        try:
            times = member.cpu_times()
        except psutil.Error:  # ended between the listing and the reading: its parent has it
            continue
        total += times.user + times.system + times.children_user + times.children_system
    return total


class TreeCpuMeter:
    """CPU % of a process tree since the previous reading (100 = one core busy all along)."""

    def __init__(self, process: psutil.Process) -> None:
        self._process = process
        self._last = (time.monotonic(), tree_cpu_seconds(process))

    def percent(self) -> float:
        now, cpu_s = time.monotonic(), tree_cpu_seconds(self._process)
        then, before = self._last
        self._last = (now, cpu_s)
        if now <= then:
            return 0.0
        # A descendant orphaned before it ended (its parent gone first) takes its time with it,
        # so the total can step down once: that interval reads 0, never negative.
        return max(0.0, cpu_s - before) / (now - then) * 100.0
