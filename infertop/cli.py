"""The single `infertop` entry point: the parser built from infertop/commands/ (one module per
sub-command), the dispatch, and how every error ends. With no sub-command it opens the
dashboard. Heavy imports happen inside each command's `main`, so `infertop trace stats` does
not pay for torch, nor `replay` for textual."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Sequence

from infertop.commands import SUBCOMMANDS, add_command, dashboard
from workloads.argtypes import OneLineParser
from workloads.terminal_text import terminal_text

EXIT_FAILED, EXIT_BAD_INPUT = 1, 2


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
    from probe.contract.errors import ConfigError
    from probe.contract.interrupts import Interrupted, exit_status, signal_of
    from workloads.errors import TraceError

    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        status = args.func(args)
        sys.stdout.flush()      # here, where a closed pipe is still ours to handle
        return status
    except BrokenPipeError:
        return closed_pipe()
    except (ConfigError, TraceError) as exc:
        print(f"infertop: error: {terminal_text(exc)}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except OSError as exc:      # a full disk, an I/O error: said, never a traceback
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"infertop: error: {where}{exc.strerror or exc}", file=sys.stderr)
        return EXIT_FAILED
    except KeyboardInterrupt as exc:
        if isinstance(exc, Interrupted):    # Ctrl-C needs no words; a SIGTERM from afar does
            print(f"infertop: stopped by {exc}", file=sys.stderr)
        return exit_status(signal_of(exc))


def closed_pipe() -> int:
    """`infertop … | head`: the reader has what it wanted. End quietly, as coreutils do;
    stdout goes to /dev/null so the interpreter's own flush at exit finds nothing to say."""
    try:
        stdout = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):   # not a file (a test's capture)
        return 0
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, stdout)
    os.close(devnull)
    return 0


if __name__ == "__main__":
    sys.exit(main())
