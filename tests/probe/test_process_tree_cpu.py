"""The engine's CPU figure counts the processes it starts (a CPU compile's g++ and workers), each
CPU second once. Checked against the kernel's own accounting (getrusage) and CPU time burnt by
known processes, never against the wall clock's length."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import time
from types import SimpleNamespace

import psutil
import pytest
import torch

from probe.engine.observe.device_probe import DeviceProbe
from probe.engine.observe.process_tree_cpu import TreeCpuMeter, tree_cpu_seconds

BURN_S = 0.3
# Burns BURN_S of its own CPU time, says so, then waits (alive) for its stdin to close.
BURNER = (f"import sys, time\nend = time.process_time() + {BURN_S}\n"
          "while time.process_time() < end: pass\nprint('burnt', flush=True)\nsys.stdin.read()")
# Starts the burner as its own child: the burner is the test's grandchild.
STARTER = ("import subprocess, sys\n"
           f"subprocess.run([sys.executable, '-c', {BURNER!r}])")


def _own_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _reaped_children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _living_descendants() -> tuple[float, int]:
    """CPU seconds of the descendants still alive (in a whole suite, e.g. multiprocessing's
    resource tracker, started by an earlier test), as the kernel reports them, and how many."""
    total, count = 0.0, 0
    for child in psutil.Process().children(recursive=True):
        try:
            t = child.cpu_times()
        except psutil.NoSuchProcess:
            continue
        total += t.user + t.system + t.children_user + t.children_system
        count += 1
    return total, count


def test_a_living_grandchilds_cpu_counts_for_the_tree():
    starter = subprocess.Popen([sys.executable, "-c", STARTER], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, text=True)
    try:
        assert starter.stdout.readline().strip() == "burnt"
        me = psutil.Process()
        # the starter's own: in a whole suite this process has other descendants (the run's
        # Ray instance, multiprocessing's resource tracker), whose time also counts below
        assert len(psutil.Process(starter.pid).children()) == 1
        # the kernel's own accounting read before the tree's, so it cannot have grown past it;
        # /proc truncates each of its user and system fields to whole clock ticks (the tree's
        # own, reaped and grandchild readings: six fields), getrusage does not
        own, reaped = _own_cpu_s(), _reaped_children_cpu_s()
        tick_s = 1 / os.sysconf("SC_CLK_TCK")
        assert tree_cpu_seconds(me) - own - reaped >= BURN_S - 6 * tick_s
        assert me.cpu_times().user + me.cpu_times().system < tree_cpu_seconds(me) - BURN_S * 0.9
    finally:
        starter.stdin.close()
        starter.wait(timeout=30)


def test_a_reaped_trees_cpu_is_counted_once_as_the_kernel_does():
    before = _reaped_children_cpu_s()
    starter = subprocess.Popen([sys.executable, "-c", STARTER], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, text=True)
    assert starter.stdout.readline().strip() == "burnt"
    starter.stdin.close()
    starter.wait(timeout=30)
    reaped = _reaped_children_cpu_s() - before
    assert reaped >= BURN_S * 0.95                     # the grandchild's time reached us
    # This process's own CPU time moves while it reads, so the tree's reading is bracketed by
    # the kernel's own accounting taken just before and just after it: counted twice, the
    # grandchild's BURN_S would put it far above `after`; missed, far below `before`.
    living_before, _ = _living_descendants()
    before_total = _own_cpu_s() + _reaped_children_cpu_s() + living_before
    total = tree_cpu_seconds(psutil.Process())
    living_after, living = _living_descendants()
    after_total = _own_cpu_s() + _reaped_children_cpu_s() + living_after
    # /proc reports whole clock ticks (four fields a process, each truncated); getrusage
    # microseconds
    tick_s = 1 / os.sysconf("SC_CLK_TCK")
    assert before_total - 4 * (1 + living) * tick_s <= total <= after_total + 1e-3


def test_the_device_probes_engine_cpu_includes_a_finished_compiler_process():
    started = time.monotonic()
    probe = DeviceProbe(torch.device("cpu"))
    burner = subprocess.Popen([sys.executable, "-c", BURNER], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    assert burner.stdout.readline().strip() == "burnt"
    burner.stdin.close()
    burner.wait(timeout=30)
    sample = probe.sample()
    elapsed = time.monotonic() - started              # at least the meter's own interval
    assert sample.process_cpu_pct >= BURN_S * 0.95 / elapsed * 100


class _FakeProcess:
    """A process tree whose CPU seconds the test sets, for the meter's arithmetic."""

    def __init__(self, pid: int) -> None:
        self.pid, self.own, self.descendants = pid, 0.0, []

    def cpu_times(self):
        return SimpleNamespace(user=self.own, system=0.0, children_user=0.0, children_system=0.0)

    def children(self, recursive: bool = False):
        return self.descendants


def test_the_meter_is_cpu_seconds_over_wall_seconds_and_never_negative(monkeypatch):
    clock, machine = [100.0], {"busy": 0.0, "idle": 0.0}
    monkeypatch.setattr("probe.engine.observe.process_tree_cpu.time.monotonic", lambda: clock[0])
    monkeypatch.setattr("probe.engine.observe.process_tree_cpu.psutil.cpu_times", lambda: SimpleNamespace(
        user=machine["busy"], system=0.0, idle=machine["idle"], iowait=0.0))
    engine, compiler = _FakeProcess(1), _FakeProcess(2)
    engine.descendants = [compiler]
    meter = TreeCpuMeter(engine)
    engine.own, compiler.own, clock[0] = 0.5, 3.0, 102.0
    machine.update(busy=3.8, idle=0.2)                      # 2 cores × 2 s, 95% busy
    assert meter.percents() == (pytest.approx(95.0), (0.5 + 3.0) / 2.0 * 100)   # 175%
    engine.descendants, clock[0] = [], 103.0                # orphaned, its time gone with it
    machine.update(busy=4.8, idle=1.2)
    assert meter.percents() == (50.0, 0.0)
    engine.own, clock[0] = 1.0, 104.0
    assert meter.percents()[1] == 50.0
    assert meter.percents() == (0.0, 0.0)                   # no time passed


def test_a_child_reaped_while_the_tree_is_read_is_counted_once():
    """The engine reaps a finished compiler between reading its own times and the compiler's:
    that reading would miss the compiler's seconds (and the next interval would show them all
    at once), so it is taken again."""
    engine, compiler = _FakeProcess(1), _FakeProcess(2)
    engine.own, compiler.own, engine.descendants = 1.0, 2.5, [compiler]
    reaped = SimpleNamespace(user=1.0, system=0.0, children_user=2.5, children_system=0.0)

    def reaped_now():
        engine.descendants = []                       # the engine waited for it: its time
        engine.cpu_times = lambda: reaped             # is in the engine's children time
        raise psutil.NoSuchProcess(2)

    compiler.cpu_times = reaped_now
    assert tree_cpu_seconds(engine) == 3.5
