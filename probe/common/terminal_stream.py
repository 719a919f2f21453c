"""stdout and stderr of a command, every write through `terminal_text`: the one guard that
no line of a command (a path, a reason, a third-party warning, a traceback's message) puts
a control character from a file on the terminal raw, whichever printer forgot to escape it.
Kept: newlines, tabs, the carriage return and the erase-line sequence the progress lines
redraw themselves with. Not for the dashboard, which owns the terminal."""

from __future__ import annotations

import sys
from contextlib import contextmanager
from typing import Any, Iterator, TextIO

from probe.common.terminal_text import terminal_text

ERASE_LINE = "\x1b[2K"       # what the progress lines redraw with (after a "\r")
_KEPT = "\n\t\r"


def escaped(text: str) -> str:
    """`text` with every unsafe character escaped except newlines, tabs, CR and ERASE_LINE."""
    if text.isprintable():
        return text
    return ERASE_LINE.join("".join(c if c in _KEPT else terminal_text(c) for c in part)
                           if not part.isprintable() else part
                           for part in text.split(ERASE_LINE))


class TerminalStream:
    """A text stream that escapes what it is given, then writes it to the stream it wraps;
    everything else (fileno, isatty, flush, buffer, encoding) is the wrapped stream's."""

    def __init__(self, stream: TextIO) -> None:
        self.wrapped = stream

    def write(self, text: str) -> int:
        self.wrapped.write(escaped(text))
        return len(text)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.wrapped, name)


@contextmanager
def escaped_output() -> Iterator[None]:
    """sys.stdout and sys.stderr as TerminalStreams for the block (restored after)."""
    saved = sys.stdout, sys.stderr
    if not isinstance(sys.stdout, TerminalStream):
        sys.stdout = TerminalStream(sys.stdout)
    if not isinstance(sys.stderr, TerminalStream):
        sys.stderr = TerminalStream(sys.stderr)
    try:
        yield
    finally:
        sys.stdout, sys.stderr = saved
