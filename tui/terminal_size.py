"""The terminal's real size when stdout is not one (`infertop | tee log`).

Textual asks shutil.get_terminal_size(), which reads stdout and falls back to 80×24: piped
through tee in a 120×40 terminal, the dashboard drew its compact layout. The terminal is
still stdin's, stderr's, or the process's controlling terminal (/dev/tty); its size goes
into COLUMNS/LINES, which shutil reads first. (A resize is then not followed: that needs the
terminal on stdout.)"""

from __future__ import annotations

import os
import sys
from typing import Callable, Iterable, MutableMapping


def _from_tty() -> os.terminal_size | None:
    try:
        fd = os.open("/dev/tty", os.O_RDONLY | os.O_NOCTTY)
    except OSError:
        return None
    try:
        return os.get_terminal_size(fd)
    except OSError:
        return None
    finally:
        os.close(fd)


def terminal_size(fds: Iterable[int],
                  controlling: Callable[[], os.terminal_size | None] = _from_tty
                  ) -> os.terminal_size | None:
    """The first of `fds` that is a terminal, else the controlling terminal; None: none."""
    for fd in fds:
        try:
            size = os.get_terminal_size(fd)
        except (OSError, ValueError):
            continue
        if size.columns and size.lines:
            return size
    return controlling()


def adopt_terminal_size(environ: MutableMapping[str, str] = os.environ,
                        stdout_is_tty: Callable[[], bool] = lambda: bool(sys.__stdout__ and sys.__stdout__.isatty()),
                        find: Callable[[], os.terminal_size | None] | None = None) -> bool:
    """When stdout is not a terminal and COLUMNS/LINES are not set, set them to the real
    terminal's size. True when it did."""
    if stdout_is_tty() or ("COLUMNS" in environ and "LINES" in environ):
        return False
    size = (find or (lambda: terminal_size(_std_fds())))()
    if size is None:
        return False
    environ["COLUMNS"], environ["LINES"] = str(size.columns), str(size.lines)
    return True


def _std_fds() -> list[int]:
    fds = []
    for stream in (sys.__stdin__, sys.__stderr__):
        if stream is None:
            continue
        try:
            fds.append(stream.fileno())
        except (AttributeError, OSError, ValueError):
            continue
    return fds
