"""The CPU the engine costs: its own process and every process it started (inductor's compile
workers, the C++ compiler they run). psutil's `Process.cpu_percent` counts one process only, so
while a compile runs g++ on both cores the engine read "0% of a core" on a machine at 100%; psutil
has no tree-wide figure, hence this one."""

from __future__ import annotations

import time
from dataclasses import dataclass

import psutil


def tree_cpu_seconds(process: psutil.Process, attempts: int = 5) -> float:
    """CPU seconds spent by `process` and its descendants, living or ended. Each second is counted
    once: a living process by its own user+system time, an ended one inside the children time of
    the process that reaped it (the kernel adds a reaped child's whole tree there). A descendant
    reaped while the tree is being read would be missed (read after it went) or counted twice
    (read before, then again in its parent's children time), so a reading during which one went
    is taken again."""
    listed = _descendants(process)
    for _ in range(attempts):
        total, complete = 0.0, True
        for member in (process, *listed.values()):
            try:
                times = member.cpu_times()
            except psutil.Error:  # ended between the listing and the reading
                complete = False
                continue
            total += times.user + times.system + times.children_user + times.children_system
        after = _descendants(process)       # also the next attempt's listing
        if complete and listed.keys() <= after.keys():
            return total
        listed = after
    return total


def _descendants(process: psutil.Process) -> dict[int, psutil.Process]:
    try:
        return {child.pid: child for child in process.children(recursive=True)}
    except psutil.Error:
        return {}


def _machine_busy_and_total_s() -> tuple[float, float]:
    """The whole machine's busy and total CPU seconds, as psutil.cpu_percent counts them (guest
    time is already inside user time; idle and I/O wait are not busy)."""
    times = psutil.cpu_times()
    busy = sum(getattr(times, name, 0.0) for name in
               ("user", "nice", "system", "irq", "softirq", "steal"))
    return busy, busy + times.idle + getattr(times, "iowait", 0.0)


@dataclass(frozen=True)
class _Reading:
    when_s: float       # the middle of the reading, on the monotonic clock
    engine_s: float     # CPU seconds of the tree
    busy_s: float       # the machine's, at the same middle
    total_s: float


class TreeCpuMeter:
    """The machine's CPU % (100 = every core busy) and a process tree's (100 = one core busy
    all along) since the previous reading, over the same interval."""

    def __init__(self, process: psutil.Process) -> None:
        self._process = process
        self._last = self._read()

    def _read(self) -> _Reading:
        """Reading a tree is dozens of psutil calls, and in the engine they wait for the GIL
        behind a compile: stamped at its start, one slow reading showed the engine at 2.2
        cores on a 2-core machine, and the machine's own figure, read before it, at half the
        engine's. So the tree is stamped at the reading's middle, and the machine's seconds
        are read before and after it and averaged to the same middle."""
        busy_before, total_before = _machine_busy_and_total_s()
        started = time.monotonic()
        engine_s = tree_cpu_seconds(self._process)
        ended = time.monotonic()
        busy_after, total_after = _machine_busy_and_total_s()
        return _Reading((started + ended) / 2, engine_s, (busy_before + busy_after) / 2,
                        (total_before + total_after) / 2)

    def percents(self) -> tuple[float, float]:
        """(machine %, engine %) since the previous call."""
        now, last = self._read(), self._last
        self._last = now
        total = now.total_s - last.total_s
        machine = 100.0 * min(max(now.busy_s - last.busy_s, 0.0) / total, 1.0) if total > 0 else 0.0
        if now.when_s <= last.when_s:
            return machine, 0.0
        # A descendant orphaned before it ended (its parent gone first) takes its time with it,
        # so the total can step down once: that interval reads 0, never negative.
        engine = max(0.0, now.engine_s - last.engine_s) / (now.when_s - last.when_s) * 100.0
        return machine, engine
