"""`infertop | tee log` in a 120×40 terminal draws at 120×40, not shutil's 80×24 fallback."""

from __future__ import annotations

import os
import pty

from tui.terminal_size import adopt_terminal_size, terminal_size


def test_a_piped_stdout_takes_the_terminal_size_from_another_stream():
    leader, follower = pty.openpty()
    try:
        os.set_blocking(follower, True)
        import fcntl
        import struct
        import termios
        fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
        read, write = os.pipe()                 # what stdout is under `| tee`
        try:
            size = terminal_size([write, follower], controlling=lambda: None)
        finally:
            os.close(read)
            os.close(write)
    finally:
        os.close(leader)
        os.close(follower)
    assert (size.columns, size.lines) == (120, 40)


def test_the_size_goes_where_textual_reads_it_only_when_stdout_is_not_a_terminal():
    found = os.terminal_size((120, 40))
    environ: dict[str, str] = {}
    assert adopt_terminal_size(environ, stdout_is_tty=lambda: False, find=lambda: found)
    assert environ == {"COLUMNS": "120", "LINES": "40"}
    untouched: dict[str, str] = {}
    assert not adopt_terminal_size(untouched, stdout_is_tty=lambda: True, find=lambda: found)
    assert untouched == {}
    chosen = {"COLUMNS": "100", "LINES": "30"}                  # the user's own choice stays
    assert not adopt_terminal_size(chosen, stdout_is_tty=lambda: False, find=lambda: found)
    assert chosen == {"COLUMNS": "100", "LINES": "30"}
    assert not adopt_terminal_size({}, stdout_is_tty=lambda: False, find=lambda: None)
