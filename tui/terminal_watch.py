"""The terminal going away (its window closed, tmux killed, ssh dropped) ends the dashboard and
its engine, as ctrl+q does. The hangup's SIGHUP reaches only the job the shell had in front:
under `make run`, `tmux kill-server` left the dashboard running with no terminal, and its engine
serving for nobody on both cores. So the app checks once a second whether it still has its
controlling terminal (only if it had one when it started: a test or a pipe has none)."""

from __future__ import annotations

import os

WATCH_INTERVAL_S = 1.0


def has_controlling_terminal() -> bool:
    try:
        fd = os.open("/dev/tty", os.O_RDONLY | os.O_NOCTTY)
    except OSError:         # ENXIO: no controlling terminal (any more)
        return False
    os.close(fd)
    return True
