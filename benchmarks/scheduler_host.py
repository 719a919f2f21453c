"""The continuous-batching loop's host work per step, against the slot count: what the host
spends on a step besides the model (bookkeeping, energy attribution, the figures), with the
model's step replaced by nothing, so that the numbers are the loop's own. On a GPU that work
is what a step costs the host while a CUDA graph replays the model; issue #41 asks that it not
grow with the slots. A benchmark that prints numbers, not a test: the machine it runs on is
shared.

    PYTHONPATH=$PWD python benchmarks/scheduler_host.py [--steps N] [--slots 8,64,256]

Every slot holds a request for the whole timed window (outputs longer than the steps), and
the energy ledger reads a counter that rises by a fixed amount a read, as NVML's would.
"""

from __future__ import annotations

import argparse
import platform
import time
from pathlib import Path

from probe.engine.model.loading import load_model
from probe.engine.observe.energy_counter import EnergyReading
from tools.gpu_check.host_cost import loop_host_us


class RisingCounter:
    """An energy counter that rises 10 mJ a read: the ledger's work, without a device."""

    source = "benchmark counter"

    def __init__(self) -> None:
        self.joules = 0.0

    def read(self) -> EnergyReading:
        self.joules += 0.01
        return EnergyReading(self.joules, time.perf_counter())


def cpu_name() -> str:
    """"AMD EPYC (family 25, model 17)": the CPU changes between machines, and numbers
    without it cannot be compared."""
    fields: dict[str, str] = {}
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            fields.setdefault(key.strip(), value.strip())
    except OSError:
        return platform.processor() or platform.machine()
    return (f"{fields.get('model name', platform.machine())} (family {fields.get('cpu family', '?')}"
            f", model {fields.get('model', '?')})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--slots", default="8,64,256")
    args = parser.parse_args()
    counts = [int(s) for s in args.slots.split(",")]
    print(f"machine: {cpu_name()}, python "
          f"{platform.python_version()}; {args.steps} steps × {args.repeats}, median")
    loaded = load_model("t5-tiny")
    results = {slots: loop_host_us(loaded, "cpu", slots, steps=args.steps, repeats=args.repeats,
                                   counter=RisingCounter())
               for slots in counts}
    first = results[counts[0]]
    for slots, us in results.items():
        print(f"{slots:>5} slots: {us:8.1f} µs of host work a step  "
              f"({us / first:.2f}× {counts[0]} slots')")


if __name__ == "__main__":
    main()
