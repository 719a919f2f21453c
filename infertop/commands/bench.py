"""`infertop bench`: argparse wiring and the checks that need no torch; the study itself is
imported when it runs."""

from __future__ import annotations

import argparse
import os
import stat
from pathlib import Path

from infertop.commands.engine_args import add_compile_backend_argument, add_slo_argument
from probe.bench.experiments import select_experiments
from probe.bench.runner import run_bench
from probe.checks.bench_checks import check_compile_backend, check_ray_address
from probe.checks.engine_inputs import check_engine_inputs
from probe.checks.inductor_cache import usable_inductor_cache
from probe.checks.interrupts import WRITING_REPORT, stop_signals
from probe.checks.output_lock import OutputLock
from probe.common.argtypes import (
    note_fewer_requests,
    real_number,
    request_count,
    thread_count,
    whole_number,
)
from probe.common.atomic import check_output_folder
from probe.common.errors import BadInput
from probe.engine.process.third_party_output import third_party_output_to_engine_log
from probe.runs.capacity import DEFAULT_TARGET
from probe.runs.cluster import INSTALL_HINT as RAY_HINT
from probe.runs.cluster import require_ray
from probe.runs.plan import names
from probe.runs.stopping import SEQUENTIAL, STOPPING
from workloads.trace import load_trace

MAX_REPEATS = 1000   # warm passes per config
MAX_BUCKETS = 64     # the planner's bucket count (more edges than shapes worth compiling)


NAME = "bench"
HELP = "rerun the controlled study headless and write report.md / report.json"


def add_cli_args(parser: argparse.ArgumentParser) -> None:
    bench = parser
    bench.add_argument("--model", default=None,
                       help="a preset or a local T5 checkpoint (default: t5-small, or t5-tiny "
                            "with --quick); with --ray, a list (a,b) for a matrix of studies")
    bench.add_argument("--trace", default="chat",
                       help="a built-in trace or a file; with --ray, a list (chat,batch)")
    bench.add_argument("--device", default="auto")
    bench.add_argument("--requests", type=request_count, default=None, metavar="N",
                       help="requests per run (default: 40, or 3 with --quick)")
    bench.add_argument("--out", required=True, metavar="DIR")
    bench.add_argument("--experiments", default=None, metavar="E1,E4",
                       help="a subset of E1..E8, roofline, observer, capacity, peers (default: "
                            "all but capacity, which needs --slo, and peers, which needs "
                            "CTranslate2)")
    bench.add_argument("--quick", action="store_true",
                       help="minutes, not hours: t5-tiny, 3 requests, 2 repeats, 2 buckets, "
                            "compile=default only in E1 on a CPU")
    bench.add_argument("--repeats", type=whole_number(1, MAX_REPEATS), default=None,
                       help="repeated warm passes per config (default 3, or 2 with --quick)")
    bench.add_argument("--bucket-count", type=whole_number(1, MAX_BUCKETS), default=None,
                       metavar="K",
                       help="the planner's bucket count (default 4, or 2 with --quick)")
    bench.add_argument("--seed", type=whole_number(0), default=0,
                       help="which requests of the trace are replayed (a fixed-seed sample)")
    bench.add_argument("--threads", type=thread_count, default=None,
                       help="torch CPU threads (default: torch's own choice)")
    bench.add_argument("--stopping", choices=STOPPING, default=SEQUENTIAL,
                       help="sequential (default): a run stops once its verdict against the "
                            "runs it is compared with is settled (an always-valid confidence "
                            "sequence; --repeats stays the cap); fixed: every run serves "
                            "--repeats passes")
    add_compile_backend_argument(bench)
    bench.add_argument("--torch-trace", action="store_true",
                       help="keep a TORCH_TRACE folder for tlparse in DIR/torch_trace")
    bench.add_argument("--profile", action="store_true",
                       help="keep a torch.profiler Chrome trace of a few requests")
    bench.add_argument("--tokens", action="store_true",
                       help="keep every request's generated token ids in the runs' snapshots")
    bench.add_argument("--ray", nargs="?", const="", default=None, metavar="local|ADDRESS",
                       help="spread the runs over a Ray cluster, one whole device per run: "
                            "`local` starts one on this machine, ADDRESS joins one (alone: "
                            f"RAY_ADDRESS, else local; needs {RAY_HINT})")
    add_slo_arguments(bench)


def add_slo_arguments(parser: argparse.ArgumentParser) -> None:
    """--slo and --slo-target, as bench and tune take them."""
    add_slo_argument(parser)
    parser.add_argument("--slo-target", type=real_number(0.0, 1.0), default=DEFAULT_TARGET,
                        metavar="FRACTION", help="the attainment capacity at the SLO must keep "
                                                 f"(default {DEFAULT_TARGET:g})")


def main(args: argparse.Namespace) -> int:

    select_experiments(args.experiments)
    check_compile_backend(args.compile_backend)
    if args.ray:
        check_ray_address(args.ray)
    elif args.ray == "" and os.environ.get("RAY_ADDRESS"):
        check_ray_address(os.environ["RAY_ADDRESS"], "RAY_ADDRESS")
    check_output_folder(args.out, "--out", inputs=(*names(args.trace),
                                                   *(names(args.model) if args.model else ())))
    if args.slo is None and "capacity" in select_experiments(args.experiments):
        raise BadInput("--experiments capacity: needs --slo (the objective capacity is "
                          "measured against)")
    if args.ray is not None:
        require_ray()
    for model in names(args.model) if args.model else ():
        check_engine_inputs(model, args.device)
    for trace in names(args.trace):
        check_trace(trace, args.requests)
    usable_inductor_cache()
    # one handler of the stop signals from here to the end, torch's import included: no moment
    # of the run falls back to the default handler, which would kill it with no report
    with OutputLock(args.out, "--out"), third_party_output_to_engine_log(), \
            stop_signals(WRITING_REPORT) as stops:
        return run_bench(args, stops)


def check_trace(name: str, requests: int | None) -> None:
    """Read the trace once before the study starts, so a bad one is named in a second; a pipe
    is left to the study, as it can be read only once."""

    path = Path(name)
    if path.exists() and stat.S_ISFIFO(path.stat().st_mode):
        return
    note_fewer_requests(requests, len(load_trace(name).requests))
