"""Real dispatch lateness of the open-loop replayer: `PYTHONPATH=$PWD python benchmarks/replay_lateness.py`.

Lateness = clock at submit - scheduled time. The submit callback only records, so this measures
the replayer and the OS's sleep accuracy, not an engine.
"""

from __future__ import annotations

import argparse
import threading
import time

import numpy as np

from probe.common.percentile import percentiles
from workloads.replayer import OpenLoopReplayer, ScheduledRequest
from workloads.trace import load_trace


def measure(trace_name: str, speed: float, rate: float | None, requests: int) -> np.ndarray:
    trace = load_trace(trace_name)
    replayer = OpenLoopReplayer(trace, speed=speed, rate=rate, max_requests=requests, loop=True)
    lateness_ms: list[float] = []

    def submit(item: ScheduledRequest) -> None:
        lateness_ms.append((time.perf_counter() - item.scheduled_s) * 1000.0)

    replayer.run(submit, threading.Event())
    return np.asarray(lateness_ms)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--trace", default="chat")
    parser.add_argument("--speed", type=float, default=10.0)
    parser.add_argument("--rate", type=float, default=5.0, help="rate override (rps) to keep the run short")
    parser.add_argument("--requests", type=int, default=300)
    args = parser.parse_args()
    started = time.perf_counter()
    late = measure(args.trace, args.speed, args.rate, args.requests)
    p50, p99 = percentiles(late, (50, 99)) or (0.0, 0.0)
    print(
        f"{args.trace} at speed {args.speed:g}, rate {args.rate:g} rps ({args.speed * args.rate:g} rps real), "
        f"{len(late)} requests in {time.perf_counter() - started:.1f} s: dispatch lateness "
        f"p50 {p50:.3f} ms, p99 {p99:.3f} ms, max {late.max():.3f} ms"
    )


if __name__ == "__main__":
    main()
