"""The single `infertop` entry point: the parser built from infertop/commands/ (one module per
sub-command), the dispatch, and how every error ends. With no sub-command it opens the
dashboard. Heavy imports happen inside each command's `main`, so `infertop trace stats` does
not pay for torch, nor `replay` for textual."""

from __future__ import annotations

import argparse
import sys
import threading
from contextlib import nullcontext
from typing import Sequence

from infertop.commands import SUBCOMMANDS, add_command, dashboard
from infertop.endings import ending
from probe.checks.interrupts import default_stop_signals, signals_as_interrupt
from probe.common.argtypes import OneLineParser
from probe.common.errors import BadInput, TraceError
from probe.common.terminal_stream import escaped_output


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="infertop",
        description="Watch what each inference optimization does to a T5 pipeline under real "
                    "traffic. With no command, opens the dashboard.")
    dashboard.add_cli_args(parser)
    parser.set_defaults(func=dashboard.main)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    for command in SUBCOMMANDS:
        add_command(commands, command)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    # the command line itself (not a test's call): a headless run may fork a child to work
    # in, so that a stop ends within seconds even during a compile (stop_supervisor)
    args.supervised = argv is None
    args.argv = list(sys.argv[1:] if argv is None else argv)   # what `tune --resume` reruns
    if args.func is dashboard.main:     # the dashboard owns its terminal, and its signals
        with default_stop_signals():
            return _run(args)
    # every line a command prints escaped, whoever forgot to; and SIGTERM and SIGHUP end it
    # as Ctrl-C does, from its first moment (128 + the signal, never a kill by the default
    # handler), until a command installs its own stop handling (bench, replay, tune, doctor)
    try:
        with escaped_output(), (signals_as_interrupt()
                                if threading.current_thread() is threading.main_thread()
                                else nullcontext()):
            return _run(args)
    except KeyboardInterrupt as exc:    # one that came as the command ended
        return ending(exc)


def _run(args: argparse.Namespace) -> int:
    try:
        status = args.func(args)
        sys.stdout.flush()      # here, where a closed pipe is still ours to handle
        return status
    except (OSError, KeyboardInterrupt, BadInput, TraceError) as exc:
        return ending(exc)


if __name__ == "__main__":
    sys.exit(main())
