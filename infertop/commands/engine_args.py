"""Flags the dashboard and `replay` share: which engine serves which trace, the metrics port
and the SLO; and the compile backend bench, replay and tune take."""

from __future__ import annotations

import argparse

from probe.common.argtypes import (
    MAX_SLOTS_FLAG,
    byte_size,
    model_length,
    real_number,
    request_count,
    speed_factor,
    thread_count,
    whole_number,
)
from probe.contract.objective import SLO_HELP, slo_argument
from workloads.trace import BUILTIN_TRACES, DEFAULT_TRACE


def add_metrics_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--metrics-port", type=whole_number(0, 65535), default=None,
                        metavar="N", help="serve Prometheus metrics on 127.0.0.1:N/metrics "
                                          "(0: any free port)")


def add_compile_backend_argument(parser: argparse.ArgumentParser) -> None:
    """--compile-backend, as bench, replay and tune take it (checked by
    probe.checks.bench_checks.check_compile_backend before torch is imported)."""
    parser.add_argument("--compile-backend", default="inductor",
                        help="torch.compile backend (default inductor; eager/aot_eager test "
                             "dynamo alone, and their compile times and speeds are not "
                             "inductor's)")


def add_slo_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--slo", type=slo_argument, default=None, metavar="BOUNDS",
                        help=SLO_HELP)


def add_engine_arguments(parser: argparse.ArgumentParser, *,
                         default_speed: float | None, replaying: bool = True) -> None:
    """`replaying` False (`serve`): no --speed or --requests, and --trace only plans the
    bucket edges."""
    parser.add_argument("--model", default="t5-small",
                        help="a preset (t5-small, t5-tiny) or a local T5 checkpoint folder "
                             "(offline: config + safetensors)")
    parser.add_argument("--trace", default=DEFAULT_TRACE,
                        help=f"a built-in trace ({', '.join(BUILTIN_TRACES)}; default "
                             f"{DEFAULT_TRACE}: real production traffic) or a .jsonl/.csv file")
    parser.add_argument("--device", default="auto", help="auto, cpu or cuda[:N]")
    parser.add_argument("--opt", action="append", default=[], metavar="KEY=VALUE",
                        help="an optimization setting, e.g. compile=default (repeatable)")
    parser.add_argument("--buckets", default=None, metavar="EDGES",
                        help="bucket edges, e.g. 64,128,256 (default: the planner's best 4)")
    if replaying:
        _add_replay_arguments(parser, default_speed)
    _add_limits(parser)


def _add_replay_arguments(parser: argparse.ArgumentParser, default_speed: float | None) -> None:
    parser.add_argument("--speed", type=speed_factor, default=default_speed,
                        help="replay speed factor (default: " + (
                            f"{default_speed:g})" if default_speed else
                            "measure the engine's capacity and offer half of it; below 0.125 "
                            "the trace's clock stays at 0.125 and a share of its arrivals is "
                            "kept)"))
    parser.add_argument("--requests", type=request_count, default=None, metavar="N",
                        help="stop after N requests")


def _add_limits(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--threads", type=thread_count, default=None, metavar="N",
                        help="torch threads for the engine (default: torch's; the dashboard "
                             "leaves one core to itself)")
    parser.add_argument("--max-input", type=model_length, default=512,
                        help="longest input (default 512)")
    parser.add_argument("--max-output", type=model_length, default=512,
                        help="longest output (default 512)")
    parser.add_argument("--max-batch", type=whole_number(1, MAX_SLOTS_FLAG), default=0,
                        metavar="N",
                        help="rows of a dynamic batch and continuous batching's slots (default: "
                             "sized from the device's free memory and the trace's lengths; 8 "
                             "on a CPU)")
    parser.add_argument("--batch-window", type=real_number(0.0, 10_000.0), default=None,
                        metavar="MS",
                        help="batching=dynamic: how long the first request of a batch waits "
                             "for company, in ms (default 50)")
    parser.add_argument("--drift-every", type=whole_number(0, 1_000_000), default=8,
                        metavar="N",
                        help="decode 1 request in N again with fp32 eager, batch 1, when idle "
                             "or at the end, and compare the tokens (default 8; 0: no drift "
                             "sample, for throughput runs)")
    parser.add_argument("--kv-budget", type=byte_size, default=None, metavar="SIZE",
                        help="the KV cache's memory, e.g. 8GiB: the slots are sized to it and "
                             "the paged pool holds it (default: half the GPU's free memory)")
