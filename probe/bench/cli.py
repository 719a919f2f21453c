"""`infertop bench`: argparse wiring only; the study itself is imported when it runs."""

from __future__ import annotations

import argparse


def register(subparsers: argparse._SubParsersAction) -> None:
    bench = subparsers.add_parser(
        "bench", help="rerun the controlled study headless and write report.md / report.json")
    bench.add_argument("--model", default=None,
                       help="a preset or a local T5 checkpoint (default: t5-small, or t5-tiny "
                            "with --quick)")
    bench.add_argument("--trace", default="chat")
    bench.add_argument("--device", default="auto")
    bench.add_argument("--requests", type=int, default=None, metavar="N",
                       help="requests per run (default: 40, or 4 with --quick)")
    bench.add_argument("--out", required=True, metavar="DIR")
    bench.add_argument("--experiments", default=None, metavar="E1,E4",
                       help="a subset of E1..E7, roofline, observer (default: all)")
    bench.add_argument("--quick", action="store_true",
                       help="minutes, not hours: t5-tiny, 4 requests, 2 repeats, 2 buckets, "
                            "compile=default only in E1 on a CPU")
    bench.add_argument("--repeats", type=int, default=None,
                       help="repeated warm passes per config (default 3, or 2 with --quick)")
    bench.add_argument("--bucket-count", type=int, default=None, metavar="K",
                       help="the planner's bucket count (default 4, or 2 with --quick)")
    bench.add_argument("--seed", type=int, default=0,
                       help="which requests of the trace are replayed (a fixed-seed sample)")
    bench.add_argument("--threads", type=int, default=None,
                       help="torch CPU threads (default: torch's own choice)")
    bench.add_argument("--compile-backend", default="inductor",
                       help="torch.compile backend (default inductor; eager/aot_eager test "
                            "dynamo alone, and their compile times and speeds are not inductor's)")
    bench.add_argument("--torch-trace", action="store_true",
                       help="keep a TORCH_TRACE folder for tlparse in DIR/torch_trace")
    bench.add_argument("--profile", action="store_true",
                       help="keep a torch.profiler Chrome trace of a few requests")
    bench.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from probe.bench.runner import run_bench
    return run_bench(args)
