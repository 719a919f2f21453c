"""How a command's exception ends the process: one line and an exit status, never a
traceback. The entry point uses it, and so does the child a supervised run forks
(probe/checks/stop_supervisor.py), so both end the same way."""

from __future__ import annotations

import os
import sys

from probe.checks.interrupts import Interrupted, exit_status, signal_of
from probe.common.errors import BadInput, TraceError
from probe.common.terminal_text import terminal_text

EXIT_FAILED, EXIT_BAD_INPUT = 1, 2


def ending(exc: BaseException) -> int:
    """The exit status of `exc`, its line said; an exception of no known kind is raised again."""

    if isinstance(exc, BrokenPipeError):
        return closed_pipe()
    if isinstance(exc, (BadInput, TraceError)):
        print(f"infertop: error: {terminal_text(exc)}", file=sys.stderr)
        return EXIT_BAD_INPUT
    if isinstance(exc, OSError):    # a full disk, an I/O error: said with its file, exit 1
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"infertop: error: {terminal_text(f'{where}{exc.strerror or exc}')}",
              file=sys.stderr)
        return EXIT_FAILED
    if isinstance(exc, KeyboardInterrupt):
        if isinstance(exc, Interrupted):    # Ctrl-C needs no words; a SIGTERM from afar does
            print(f"infertop: stopped by {exc}", file=sys.stderr)
        return exit_status(signal_of(exc))
    raise exc


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
