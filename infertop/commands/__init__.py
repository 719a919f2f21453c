"""Every `infertop` sub-command, one module each, in the order `infertop --help` lists them.

Each module has `NAME` and `HELP` (its line in the help), `add_cli_args(parser)` (its flags)
and `main(args) -> int` (the exit status), as vLLM's benchmarks do; `dashboard` holds the
flags of `infertop` with no command. A module imports only argparse-level helpers at the top:
torch, textual and the engine are imported inside `main`, so `infertop --help` and every
bad-input line stay fast (tests/probe/test_import_hygiene.py)."""

from __future__ import annotations

import argparse
from types import ModuleType

from infertop.commands import attach, bench, doctor, replay, serve, snapshot, trace, tune

SUBCOMMANDS: tuple[ModuleType, ...] = (replay, serve, attach, bench, tune, trace, doctor, snapshot)


def add_command(subparsers: argparse._SubParsersAction, command: ModuleType
                ) -> argparse.ArgumentParser:
    """One sub-command's parser: its help line, its flags, its `main` as `args.func`."""
    parser = subparsers.add_parser(command.NAME, help=command.HELP)
    command.add_cli_args(parser)
    parser.set_defaults(func=command.main)
    return parser
