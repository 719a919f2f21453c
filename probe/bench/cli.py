"""`infertop bench`: argparse wiring only; the study itself is imported when it runs."""

from __future__ import annotations

import argparse


def register(subparsers: argparse._SubParsersAction) -> None:
    bench = subparsers.add_parser(
        "bench", help="rerun the controlled study headless and write report.md / report.json")
    bench.add_argument("--model", default="t5-small")
    bench.add_argument("--trace", default="chat")
    bench.add_argument("--device", default="auto")
    bench.add_argument("--requests", type=int, default=None, metavar="N",
                       help="requests per run (default: 40, or 12 with --quick)")
    bench.add_argument("--out", required=True, metavar="DIR")
    bench.add_argument("--experiments", default=None, metavar="E1,E4",
                       help="a subset of E1..E7, roofline, observer (default: all)")
    bench.add_argument("--quick", action="store_true",
                       help="minutes, not hours: t5-tiny, few requests, one repeat")
    bench.add_argument("--repeats", type=int, default=None,
                       help="repeated warm runs per config (default 3, or 1 with --quick)")
    bench.add_argument("--torch-trace", action="store_true",
                       help="keep a TORCH_TRACE folder for tlparse in DIR/torch_trace")
    bench.add_argument("--profile", action="store_true",
                       help="keep a torch.profiler Chrome trace of a few requests")
    bench.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from probe.bench.runner import run_bench
    return run_bench(args)
