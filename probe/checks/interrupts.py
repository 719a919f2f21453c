"""The signals that end a headless run (`replay`, `bench`) the way Ctrl-C does: what was
served is saved first, and the exit status is 128 + the signal's number, as a shell reports
a process that signal killed (130 Ctrl-C, 129 SIGHUP, 143 SIGTERM: what `timeout`, systemd,
Kubernetes and CI send). Torch-free."""

from __future__ import annotations

import _thread
import contextlib
import os
import signal
import sys
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Iterator

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
TERM_SIGNALS = STOP_SIGNALS[1:]     # Ctrl-C's SIGINT keeps Python's own handler
WRITING_REPORT = "writing the report of the runs that finished"    # bench's, while it waits


class Interrupted(KeyboardInterrupt):
    """A stop signal raised where Ctrl-C's KeyboardInterrupt would be: every handler of
    KeyboardInterrupt treats it as one, and it says which signal it was."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def exit_status(signum: int) -> int:
    return 128 + signum


def signal_of(exc: BaseException) -> int:
    """The signal a KeyboardInterrupt stands for (a plain one is Ctrl-C's SIGINT)."""
    return exc.signum if isinstance(exc, Interrupted) else signal.SIGINT


def say(text: str) -> None:
    """One line on stderr from a signal handler: os.write, not print, so a handler that runs
    while the main thread is inside print() never re-enters its buffer; a terminal gone away
    (SIGHUP) is no reason to fail. To `sys.stderr`'s descriptor, not 2: while third-party
    output goes to the engine log, descriptor 2 is the log and `sys.stderr` the terminal."""
    try:
        fd = sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):
        fd = 2
    with contextlib.suppress(OSError):
        os.write(fd, (text + "\n").encode(errors="replace"))


REDELIVER_S = 0.02   # after the swallowing callback has returned


@contextmanager
def interrupts_never_lost() -> Iterator[None]:
    """A handler's Interrupted (or Ctrl-C's KeyboardInterrupt) raised while the main thread runs
    a callback whose exceptions Python swallows — a weakref callback, a `__del__`, a gc
    callback: "Exception ignored in … torch/_dynamo/utils.py … Interrupted: SIGHUP" — would
    be lost, and the run would go on as if never stopped. Such an exception reaches
    `sys.unraisablehook`: here it is only flagged, nothing printed, and a moment later (the
    callback has returned by then) the same signal is delivered again to the main thread,
    whose handler raises it where the run can catch it; any other unraisable exception goes
    to the hook as before. Not from the hook itself: a handler run inside the hook would be
    swallowed the same way."""
    previous = sys.unraisablehook
    active = threading.Event()
    active.set()

    def hook(unraisable) -> None:
        exc = unraisable.exc_value
        if not isinstance(exc, KeyboardInterrupt):
            previous(unraisable)
            return
        threading.Thread(target=_deliver_again, args=(signal_of(exc), active), daemon=True,
                         name="infertop-interrupt-again").start()

    sys.unraisablehook = hook
    try:
        yield
    finally:
        active.clear()
        sys.unraisablehook = previous


def _deliver_again(signum: int, active: threading.Event) -> None:
    """Not once the run has left `interrupts_never_lost`: it has stopped already, and a
    late Ctrl-C would land in whatever the process does next."""
    time.sleep(REDELIVER_S)
    if not active.is_set():
        return
    with contextlib.suppress(ValueError, OSError, RuntimeError):
        _thread.interrupt_main(signal.Signals(signum))   # its handler, if any


@contextmanager
def signals_as_interrupt() -> Iterator[None]:
    """SIGTERM and SIGHUP raise Interrupted in the main thread, as Ctrl-C raises
    KeyboardInterrupt (for runs whose Ctrl-C handling is an `except KeyboardInterrupt`); one
    raised where Python would swallow it is delivered again (`interrupts_never_lost`)."""
    def handle(signum, frame) -> None:
        raise Interrupted(signum)

    with interrupts_never_lost(), _handlers(handle, TERM_SIGNALS):
        yield


@contextmanager
def default_stop_signals() -> Iterator[None]:
    """SIGTERM and SIGHUP back to the default (the process ends) for the duration: the
    dashboard's, which `python -m infertop` would otherwise enter with its early handlers."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    with _handlers(signal.SIG_DFL, TERM_SIGNALS):
        yield


@contextmanager
def _handlers(handler, signals: tuple[int, ...] = STOP_SIGNALS) -> Iterator[None]:
    """`signals` go to `handler` for the duration; the handlers before are put back after."""
    previous = {s: signal.signal(s, handler) for s in signals}
    try:
        yield
    finally:
        for s, before in previous.items():
            signal.signal(s, before)


@contextmanager
def signals_wait(doing: str) -> Iterator[list[int]]:
    """While the output of what finished is being written (a report that takes a second), a
    stop signal only says so and waits: that output is what every stop asks for, and a signal
    that cut it short would leave nothing. Yields the signals received meanwhile."""
    waits = StopSignals(doing, armed=False)
    with _handlers(waits.handle):
        yield waits.received


@dataclass
class StopSignals:
    """One handler of Ctrl-C, SIGTERM and SIGHUP for a whole run (`bench`), so that no moment
    of it falls back to the default handler (which kills the process, "Terminated", and writes
    nothing). Flag, then check: every signal is recorded in `received` first; only while
    `armed` (the run's work, whose `except KeyboardInterrupt` writes what finished and sets
    `taken`) does it also raise, Interrupted for SIGTERM and SIGHUP, KeyboardInterrupt for
    Ctrl-C. Disarmed (the output of what finished is being written) it says so and waits.
    `check()`, where raising is safe (between runs): a signal not yet taken — one that came
    while disarmed, or whose raise something swallowed — raises there."""
    doing: str
    armed: bool = True
    taken: bool = False
    received: list[int] = field(default_factory=list)

    def handle(self, signum: int, frame) -> None:
        self.received.append(signum)
        if self.armed:
            raise _interrupt_of(signum)
        say(f"infertop: {signal.Signals(signum).name}: {self.doing}; a moment")

    def check(self) -> None:
        if self.received and not self.taken:
            raise _interrupt_of(self.received[0])

    @property
    def signum(self) -> int | None:
        return self.received[0] if self.received else None


def _interrupt_of(signum: int) -> KeyboardInterrupt:
    return KeyboardInterrupt() if signum == signal.SIGINT else Interrupted(signum)


@contextmanager
def stop_signals(doing: str) -> Iterator[StopSignals]:
    """`StopSignals` installed for the duration (armed), raises never lost
    (`interrupts_never_lost`); the handlers before are given back after."""
    stops = StopSignals(doing)
    with interrupts_never_lost(), _handlers(stops.handle):
        yield stops
