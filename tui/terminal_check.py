"""Whether the dashboard has a terminal to draw on. Textual draws on stderr: with stderr
redirected (`infertop 2>log`) the pane stayed blank, with no word, while the engine loaded."""

from __future__ import annotations

import sys
from typing import TextIO


def _is_tty(stream: TextIO | None) -> bool:
    try:
        return bool(stream is not None and stream.isatty())
    except (AttributeError, ValueError, OSError):
        return False


def no_terminal_problem(stderr: TextIO | None = None) -> str | None:
    """One line saying why the dashboard cannot draw, or None when stderr is a terminal."""
    stderr = sys.__stderr__ if stderr is None else stderr
    if _is_tty(stderr):
        return None
    return ("infertop: the dashboard draws on stderr, which is not a terminal here (redirected "
            "to a file or a pipe?); run it in a terminal, or use `infertop replay` for a "
            "headless run")


def say_no_terminal(problem: str, stdout: TextIO | None = None,
                    stderr: TextIO | None = None) -> None:
    """The line on stdout when that is a terminal (the user's screen), and on stderr (the log)."""
    stdout = sys.__stdout__ if stdout is None else stdout
    stderr = sys.__stderr__ if stderr is None else stderr
    for stream in (stdout, stderr):
        if stream is None:
            continue
        try:
            print(problem, file=stream, flush=True)
        except (OSError, ValueError):
            continue
