"""A stop that ends within seconds, even during a torch.compile. A compile (an HF `generate()`
compile takes minutes on a CPU) cannot be cut short from Python: a signal handler runs only
between its bytecodes, and what it raises may be caught inside torch. So a headless run
(`replay`) does its work in a child process of its own, forked before torch is imported,
and this parent only watches:

- the first SIGINT, SIGTERM or SIGHUP is passed on to the child, which stops as it always
  did (the request in progress finishes, what was served is saved); if it has not ended
  after `grace_s`, the parent kills it (its whole process group: inductor's compile workers
  too) and `salvage` writes what the child had already made durable (replay: its journal);
- a second signal kills the child at once and salvages, every time.

The child is in a process group of its own, so a Ctrl-C at the terminal reaches the parent
alone, which passes it on once. Torch-free."""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
import time
from dataclasses import dataclass, field
from typing import Callable

from probe.checks.interrupts import STOP_SIGNALS, exit_status, say

GRACE_S = 6.0           # the first signal's wait; saving gets SAVE_GRACE_S more: under 10 s
SAVE_GRACE_S = 3.0
_PR_SET_PDEATHSIG = 1


@dataclass(frozen=True)
class Stopped:
    """How the child was stopped, for `salvage`: the first signal, and what it told the
    parent meanwhile (its `note` lines: replay's journal path)."""
    signum: int
    notes: tuple[str, ...] = field(default=())
    again: bool = False         # a second signal stopped it (else: the grace ran out)


def _note_writer(fd: int) -> Callable[[str], None]:
    def note(text: str) -> None:
        with contextlib.suppress(OSError):
            os.write(fd, (text.replace("\n", " ") + "\n").encode(errors="replace"))
    return note


def _die_with_parent() -> None:
    """Linux: a kill -9 of the parent kills the child too, as it killed the run before the
    fork (its journal is left for `snapshot recover`); no orphan serves on unseen."""
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def run_supervised(work: Callable[[Callable[[str], None]], int],
                   ending: Callable[[BaseException], int],
                   salvage: Callable[[Stopped], int], *, grace_s: float = GRACE_S) -> int:
    """`work(note)` in a forked child; returns its exit status, or `salvage`'s when the child
    had to be killed. `ending(exc)`: the exit status (and its one line) of an exception the
    work raised, as the entry point would give it. `note("saving")` tells the parent the
    child is writing its output (it gets SAVE_GRACE_S more); `note("saved")`, that it has."""
    sys.stdout.flush()
    sys.stderr.flush()
    read_fd, write_fd = os.pipe()
    received: list[int] = []
    # the parent's handlers before the fork: no signal falls between the two
    previous = {s: signal.signal(s, lambda signum, _frame: received.append(signum))
                for s in STOP_SIGNALS}
    child = os.fork()
    if child == 0:                                  # the child: the work, as before
        for s, handler in previous.items():
            signal.signal(s, handler)
        os.close(read_fd)
        with contextlib.suppress(OSError):
            os.setpgid(0, 0)
        _die_with_parent()      # its signal handlers are the parent's until the work sets its own
        try:
            status = work(_note_writer(write_fd))
        except BaseException as exc:                # noqa: BLE001 - the child must end here
            try:
                status = ending(exc)
            except BaseException:                   # noqa: BLE001
                import traceback
                traceback.print_exc()
                status = 1
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(status)
    os.close(write_fd)
    with contextlib.suppress(OSError):              # it did so itself already
        os.setpgid(child, child)
    try:
        return _watch(child, read_fd, salvage, grace_s, received)
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def _watch(child: int, read_fd: int, salvage: Callable[[Stopped], int], grace_s: float,
           received: list[int]) -> int:
    os.set_blocking(read_fd, False)
    notes: list[str] = []
    pending = b""
    passed_on = 0
    deadline: float | None = None
    try:
        while True:
            pending = _read_notes(read_fd, pending, notes)
            done, status = os.waitpid(child, os.WNOHANG)
            if done:
                _read_notes(read_fd, pending, notes)
                return _status_of(status)
            if received and passed_on == 0:
                passed_on = 1
                deadline = time.monotonic() + grace_s
                _signal(child, received[0], group=False)
            saving = "saving" in notes and "saved" not in notes
            late = deadline is not None and time.monotonic() > deadline + (
                SAVE_GRACE_S if saving else 0.0)
            if len(received) > 1 or late:
                why = (f"{signal.Signals(received[-1]).name} again" if len(received) > 1 else
                       f"still busy {grace_s:g} s after the {signal.Signals(received[0]).name} "
                       f"(a compile cannot be cut short)")
                if "saved" in notes:    # its output is written: it only has to end
                    if not _ended_within(child, SAVE_GRACE_S):
                        _signal(child, signal.SIGKILL, group=True)
                        os.waitpid(child, 0)
                    return exit_status(received[0])
                say(f"infertop: {why}: stopping it now; keeping what was finished")
                _signal(child, signal.SIGKILL, group=True)
                os.waitpid(child, 0)
                _read_notes(read_fd, pending, notes)
                return salvage(Stopped(received[0], tuple(notes), again=len(received) > 1))
            time.sleep(0.02)
    finally:
        os.close(read_fd)


def _ended_within(child: int, seconds: float) -> bool:
    until = time.monotonic() + seconds
    while time.monotonic() < until:
        if os.waitpid(child, os.WNOHANG)[0]:
            return True
        time.sleep(0.02)
    return False


def _read_notes(fd: int, pending: bytes, notes: list[str]) -> bytes:
    while True:
        try:
            chunk = os.read(fd, 65536)
        except BlockingIOError:
            break
        if not chunk:
            break
        pending += chunk
    *lines, pending = pending.split(b"\n")
    notes.extend(line.decode(errors="replace") for line in lines)
    return pending


def _signal(child: int, signum: int, *, group: bool) -> None:
    if group:
        with contextlib.suppress(ProcessLookupError):   # no group of its own: the child alone
            os.killpg(child, signum)
            return
    with contextlib.suppress(ProcessLookupError):
        os.kill(child, signum)


def _status_of(status: int) -> int:
    if os.WIFSIGNALED(status):
        return exit_status(os.WTERMSIG(status))
    return os.waitstatus_to_exitcode(status)
