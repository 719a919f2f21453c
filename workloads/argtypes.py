"""Command-line numbers, checked while the arguments are parsed: before any file is read, any
model loaded or torch imported. A bad value is one line naming the option and its valid range.

`OneLineParser` is the parser class of the `infertop` command (its sub-commands inherit it):
argparse's own errors become `infertop: error: ...` on one line too, with exit status 2.
"""

from __future__ import annotations

import argparse
import math
import sys
from typing import Callable, NoReturn

from .rows import shown
from .terminal_text import terminal_text

MAX_THREADS = 1024


class OneLineParser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.exit(2, f"infertop: error: {terminal_text(message)} (see {self.prog} --help)\n")


def whole_number(low: int, high: int | None = None) -> Callable[[str], int]:
    """An argparse type: a whole number in [low, high] (no upper bound when high is None)."""
    valid = f"a whole number from {low:,} to {high:,}" if high is not None else f"a whole number >= {low:,}"

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {valid}, got {shown(text)}") from None
        if value < low or (high is not None and value > high):
            raise argparse.ArgumentTypeError(f"expected {valid}, got {shown(text)}")
        return value

    return parse


def real_number(above: float, at_most: float | None = None) -> Callable[[str], float]:
    """An argparse type: a finite number > `above` (and <= `at_most` when given)."""
    valid = f"a finite number > {above:g}" + (f" and <= {at_most:g}" if at_most is not None else "")

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {valid}, got {shown(text)}") from None
        if not (math.isfinite(value) and value > above and (at_most is None or value <= at_most)):
            raise argparse.ArgumentTypeError(f"expected {valid}, got {shown(text)}")
        return value

    return parse


thread_count = whole_number(1, MAX_THREADS)  # --threads: torch's CPU threads


def note_fewer_requests(requested: int | None, available: int) -> None:
    """`--requests N` means "at most N": on a shorter trace, say on stderr how many will be served."""
    if requested is not None and requested > available:
        print(f"infertop: note: --requests {requested}: the trace has {available} requests; "
              f"serving {available}", file=sys.stderr)
