"""Command-line numbers, checked while the arguments are parsed: before any file is read, any
model loaded or torch imported. A bad value is one line naming the option and its valid range.

`OneLineParser` is the parser class of the `infertop` command (its sub-commands inherit it):
argparse's own errors become `infertop: error: ...` on one line too, with exit status 2.
"""

from __future__ import annotations

import argparse
import difflib
import math
import sys
from typing import Any, Callable, NoReturn

from probe.common.errors import file_error
from probe.common.shown import shown
from probe.common.terminal_text import terminal_text

MAX_THREADS = 1024
# Bounds on what a run is asked to do, so that every run can finish (docs/bad-input.md):
MIN_SPEED, MAX_SPEED = 1e-3, 1e6        # --speed: 1000× slower to a million× faster
MIN_RATE_RPS, MAX_RATE_RPS = 1e-4, 1e6  # --rate: one request every ~3 h to a million a second
MAX_REQUESTS = 10_000_000               # --requests: a replay or a bench run
MAX_CONCURRENCY = 1024                  # --concurrency: requests outstanding at once
MAX_MODEL_LENGTH = 65_536               # --max-input/--max-output of the engine (its KV)
MAX_REPLAY_S = 31 * 86_400              # the longest replay: the trace's span ÷ --speed


class OneLineParser(argparse.ArgumentParser):
    """No abbreviations (`--request` is not `--requests`), and a mistyped flag is named: argparse
    reports the word after an unknown flag ("invalid choice: 't5-tiny'" for `--modle t5-tiny`)."""

    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)
        self._given: list[str] = []

    def parse_known_args(self, args=None, namespace=None):
        self._given = list(sys.argv[1:] if args is None else args)
        return super().parse_known_args(args, namespace)

    def error(self, message: str) -> NoReturn:
        unknown = unknown_flag(self, self._given)
        if unknown is not None:
            self.exit(2, f"infertop: error: {terminal_text(unknown)}\n")
        self.exit(2, f"infertop: error: {terminal_text(message)} (see {self.prog} --help)\n")


def _own_flags(parser: argparse.ArgumentParser) -> set[str]:
    return {flag for action in parser._actions for flag in action.option_strings}


def _sub_commands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    return {name: sub for action in parser._actions
            if isinstance(action, argparse._SubParsersAction)
            for name, sub in action.choices.items()}


def unknown_flag(parser: argparse.ArgumentParser, given: list[str]) -> str | None:
    """"unknown flag --modle (did you mean --model?)" for the first word of `given` that looks
    like a flag and is not one of the command it follows, or None when every flag is known. A
    sub-command's name switches to its flags, as argparse does."""
    current, known = parser, _own_flags(parser)
    for word in given:
        if word == "--":
            break
        if word in _sub_commands(current):
            current = _sub_commands(current)[word]
            known = _own_flags(current)
            continue
        if not word.startswith("-") or word == "-" or _is_number(word):
            continue
        name = word.split("=", 1)[0]
        if name in known or (not word.startswith("--") and word[:2] in known):
            continue
        close = difflib.get_close_matches(name, sorted(f for f in known if f.startswith("--")),
                                          n=1, cutoff=0.6)
        hint = f" (did you mean {close[0]}?)" if close else ""
        return f"unknown flag {name}{hint}"
    return None


def _is_number(word: str) -> bool:
    try:
        float(word)
    except ValueError:
        return False
    return True


def _checked(convert: Callable[[str], Any], valid: str, ok: Callable[[Any], bool]
             ) -> Callable[[str], Any]:
    """An argparse type: `convert(text)` where `ok` holds, else "expected {valid}, got …"."""
    def parse(text: str) -> Any:
        try:
            value = convert(text)
        except ValueError:
            value = None
        if value is None or not ok(value):
            raise argparse.ArgumentTypeError(f"expected {valid}, got {shown(text)}")
        return value

    return parse


def whole_number(low: int, high: int | None = None) -> Callable[[str], int]:
    """An argparse type: a whole number in [low, high] (no upper bound when high is None)."""
    valid = f"a whole number from {low:,} to {high:,}" if high is not None else f"a whole number >= {low:,}"
    return _checked(int, valid, lambda value: low <= value and (high is None or value <= high))


def real_number(above: float, at_most: float | None = None) -> Callable[[str], float]:
    """An argparse type: a finite number > `above` (and <= `at_most` when given)."""
    valid = f"a finite number > {above:g}" + (f" and <= {at_most:g}" if at_most is not None else "")
    return _checked(float, valid, lambda value: math.isfinite(value) and value > above
                    and (at_most is None or value <= at_most))


def ranged_real(low: float, high: float) -> Callable[[str], float]:
    """An argparse type: a finite number from `low` to `high`, both included."""
    return _checked(float, f"a number from {low:g} to {high:g}",
                    lambda value: math.isfinite(value) and low <= value <= high)


_BYTE_UNITS = {"": 1, "B": 1, "KIB": 2**10, "MIB": 2**20, "GIB": 2**30, "TIB": 2**40,
               "KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12}
MAX_SLOTS_FLAG = 4096                   # --max-batch: rows of a dynamic batch, or slots


def byte_size(text: str) -> int:
    """An argparse type: a size like 8GiB, 512MiB, 2.5GB or a number of bytes (at least 1 MiB:
    less holds no slot of any model)."""
    valid = "a size like 8GiB, 512MiB or 2.5GB (at least 1MiB)"
    stripped = text.strip().upper()
    number = stripped.rstrip("KMGTIB")
    unit = stripped[len(number):]
    try:
        value = float(number) * _BYTE_UNITS[unit]
    except (ValueError, KeyError):
        raise argparse.ArgumentTypeError(f"expected {valid}, got {shown(text)}") from None
    if not math.isfinite(value) or value < 2**20 or value > 2**50:
        raise argparse.ArgumentTypeError(f"expected {valid}, got {shown(text)}")
    return int(value)


thread_count = whole_number(1, MAX_THREADS)  # --threads: torch's CPU threads
speed_factor = ranged_real(MIN_SPEED, MAX_SPEED)
arrival_rate = ranged_real(MIN_RATE_RPS, MAX_RATE_RPS)
request_count = whole_number(1, MAX_REQUESTS)
model_length = whole_number(1, MAX_MODEL_LENGTH)


def check_replay_span(first_ms: float, last_ms: float, speed: float, what: str) -> None:
    """A replay whose arrivals span more than MAX_REPLAY_S at this speed would not finish:
    refused before the model loads (a trace with timestamps a century apart, a tiny --speed)."""
    span_s = (last_ms - first_ms) / 1000.0 / speed
    if span_s > MAX_REPLAY_S:
        raise file_error(
            f"{what}: its arrivals span {span_s / 86_400:,.0f} days at --speed {speed:g}; "
            f"the longest replay is {MAX_REPLAY_S // 86_400} days (raise --speed or use "
            f"--concurrency)")


def note_fewer_requests(requested: int | None, available: int) -> None:
    """`--requests N` means "at most N": on a shorter trace, say on stderr how many will be served."""
    if requested is not None and requested > available:
        print(f"infertop: note: --requests {requested}: the trace has {available} requests; "
              f"serving {available}", file=sys.stderr)
