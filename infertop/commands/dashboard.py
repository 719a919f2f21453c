"""`infertop` with no command: the live dashboard, or `--load` a saved session read-only
(tui/launch.py)."""

from __future__ import annotations

import argparse

from infertop.commands.engine_args import (
    add_engine_arguments,
    add_metrics_argument,
    add_slo_argument,
)
from probe.checks.inductor_cache import usable_inductor_cache
from tui.launch import launch
from tui.terminal_check import no_terminal_problem, say_no_terminal


def add_cli_args(parser: argparse.ArgumentParser) -> None:
    add_engine_arguments(parser, default_speed=None)
    add_metrics_argument(parser)
    add_slo_argument(parser)
    parser.add_argument("--snapshot-dir", default="snapshots", help="where `s` saves snapshots")
    parser.add_argument("--torch-trace", action="store_true",
                        help="keep a TORCH_TRACE of the session (for tlparse) in the snapshot "
                             "folder")
    parser.add_argument("--load", default=None, metavar="SNAPSHOT.json",
                        help="reopen a saved session read-only")


def main(args: argparse.Namespace) -> int:

    problem = no_terminal_problem()
    if problem is not None:     # the dashboard draws on stderr: nothing to draw on
        say_no_terminal(problem)
        return 2
    if args.load is None:
        usable_inductor_cache()     # the engine process inherits the fallback folder
    return launch(args)
