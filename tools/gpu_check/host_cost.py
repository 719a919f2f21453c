"""What the continuous-batching loop costs the host a step, besides the model: the numbers that
tell which host work stands between a replayed CUDA graph and a busy GPU (issue #41).

- `loop_host_us`: the scheduler's whole step (bookkeeping, the energy ledger's counter reads,
  the timeline's marks, the figures) with the model's step replaced by nothing, at a slot
  count. Every slot holds a request for the whole timed window.
- `call_us`: one call of a piece of it (an energy counter read, a timeline mark, a device
  sample), alone; and what the compile ledger's timer adds to each call of a wrapped step
  (batch-1 decoding calls it every token: a signature, and two CUDA events on a GPU).

gpu-check's `host` section runs both on the GPU; benchmarks/scheduler_host.py runs the first
on a CPU with a counter of its own.
"""

from __future__ import annotations

import time
from typing import Callable

import torch

from probe.analysis.compile_ledger import LedgerBook
from probe.common.clock import SessionClock
from probe.common.percentile import median
from probe.contract.options import parse_opts
from probe.engine.continuous_scheduler import ContinuousScheduler
from probe.engine.decode.device_timeline import timeline_for
from probe.engine.engine import Engine, EngineSettings
from probe.engine.model.loading import LoadedModel
from probe.engine.model.requests import EngineRequest
from probe.engine.observe.device_probe import DeviceProbe
from probe.engine.observe.energy_counter import EnergyCounter, Unavailable
from probe.engine.observe.energy_ledger import EnergyLedger
from probe.engine.observe.graph_timer import GraphTimer


def loop_host_us(loaded: LoadedModel, device: str, slots: int, *, steps: int, repeats: int,
                 counter: EnergyCounter | None = None) -> float:
    """The median over `repeats` windows of `steps` steps, in µs a step. `counter`: the
    energy ledger's (None: the device's own, as the engine reads it)."""
    settings = EngineSettings(model=loaded.info.name, device=device, max_new_tokens=steps + 2,
                              max_input_tokens=8, compile_backend="eager", keep_tokens=False,
                              max_batch=slots, drift_every=0)
    engine = Engine(settings, parse_opts(["batching=continuous"]), loaded=loaded)
    try:
        if counter is not None:
            engine.energy = EnergyLedger(counter)
        windows = []
        for repeat in range(repeats):
            scheduler = ContinuousScheduler(engine)
            scheduler.batcher.step = lambda: None       # type: ignore[method-assign]
            scheduler.join([EngineRequest(f"r{repeat}-{i}", 500 + i, 8, steps + 1, 0.0)
                            for i in range(slots)])
            started = time.perf_counter()
            for _ in range(steps):
                scheduler.step()
            windows.append((time.perf_counter() - started) / steps * 1e6)
            while scheduler.active:         # let the requests finish, off the clock
                scheduler.step()
        return median(windows) or 0.0       # windows: `repeats` of them
    finally:
        engine.close()


def call_us(call: Callable[[], object], calls: int = 200) -> float:
    """µs a call, the median of five runs of `calls` calls."""
    runs = []
    for _ in range(5):
        started = time.perf_counter()
        for _ in range(calls):
            call()
        runs.append((time.perf_counter() - started) / calls * 1e6)
    return median(runs) or 0.0      # five runs


def timer_us(device: torch.device) -> float:
    """µs the graph timer adds to a call with a decode step's six tensors: the wrapped call's
    time less the bare one's (the book's pending events read between runs, as the engine's
    flush does)."""
    tensors = [torch.zeros((1, 1), dtype=torch.long, device=device) for _ in range(6)]

    def step(*args: torch.Tensor) -> None:
        return None
    timer = GraphTimer(LedgerBook(), SessionClock(), None, device)
    timer.set_context("c1", ("r0",))
    wrapped = timer.wrap("decode_step", step, compiled=False)
    bare = call_us(lambda: step(*tensors))
    timed = call_us(lambda: wrapped(*tensors))
    timer.settle()
    return max(0.0, timed - bare)


def host_costs(loaded: LoadedModel, device: torch.device, slot_counts: tuple[int, ...], *,
               steps: int = 200, repeats: int = 3,
               log: Callable[[str], None] = print) -> dict:
    """gpu-check's `host` section: the loop's host µs a step at each slot count, and the
    per-call cost of the pieces it reads each step."""
    probe = DeviceProbe(device)
    counter = probe.energy_counter()
    timeline = timeline_for(device)
    pieces: dict[str, float | str] = {
        "timeline mark": call_us(timeline.mark),
        "device sample (the panel's, once a second)": call_us(probe.sample, calls=20),
        "compile ledger's timer, added to a wrapped call": timer_us(device),
    }
    pieces["energy counter read (twice a step)"] = (
        counter.reason if isinstance(counter, Unavailable) else call_us(counter.read))
    loop = {slots: loop_host_us(loaded, str(device), slots, steps=steps, repeats=repeats)
            for slots in slot_counts}
    for name, value in pieces.items():
        log(f"  host: {name}: " + (f"{value:.1f} µs" if isinstance(value, float) else value))
    first = loop[slot_counts[0]]
    for slots, us in loop.items():
        log(f"  host: the loop's own work at {slots} slots: {us:.1f} µs a step "
            f"({us / first:.2f}× {slot_counts[0]} slots')")
    return {"calls_us": pieces, "loop_us_by_slots": loop,
            "growth": loop[slot_counts[-1]] / first if first else None}
