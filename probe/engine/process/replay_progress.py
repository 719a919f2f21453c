"""`replay`'s progress on stderr. On a terminal: one `N/M served` line rewritten in place, at
most every PROGRESS_INTERVAL_S; piped (a log, a CI job): one line per request served, which a
script can read, each starting with the same labelled count (`[12/40 served, 1 failed]`:
served counts served requests only) and every column named."""

from __future__ import annotations

import sys
import time
from typing import Callable, Sequence, TextIO

from probe.analysis.compile_wait import compile_wait_ms
from probe.analysis.fallbacks import fallback_line, fallbacks
from probe.contract.records import CompileEvent, RequestRecord

PROGRESS_INTERVAL_S = 0.5


def progress_line(record: RequestRecord, counter: str,
                  events: Sequence[CompileEvent] = ()) -> str:
    """One served (or failed) request, every column labelled, after the `N/M served` count:
    its compile wait from arrival to end (compile_wait.compile_wait_ms, the doctor's compile
    cause) and the part of it inside its own service (`compile_stall_ms`)."""
    status = (f"failed: {record.error}" if record.error else
              f"latency={record.latency_ms:.1f} ms compile_wait="
              f"{compile_wait_ms(record, events):.1f} ms "
              f"(own service {record.compile_stall_ms:.1f} ms)")
    return (f"[{counter}] {record.id} config={record.config_id} "
            f"in={record.input_tokens} out={record.output_tokens} {status}")


class ReplayProgress:
    """Called with each batch of records as it is served (ServingLoop's on_records)."""

    def __init__(self, total: int, stream: TextIO | None = None, *,
                 clock: Callable[[], float] = time.monotonic,
                 interval_s: float = PROGRESS_INTERVAL_S,
                 events: Callable[[], Sequence[CompileEvent]] | None = None) -> None:
        """`events`: the session's compile events so far (a piped line's compile wait)."""
        self.total = total
        self._events = events
        self._stream = stream or sys.stderr
        self._tty = _is_terminal(self._stream)
        self._clock, self._interval_s = clock, interval_s
        self._shown_at: float | None = None
        self.served = self.failed = 0
        self._fallbacks_said = 0

    def __call__(self, records: Sequence[RequestRecord]) -> None:
        events = self._events() if self._events is not None else ()
        self._say_fallbacks(events)
        for record in records:
            if record.ok:
                self.served += 1
            else:
                self.failed += 1
            if not self._tty:
                self._write(progress_line(record, self.counter(), events) + "\n")
        if self._tty:
            now = self._clock()
            if self._shown_at is None or now - self._shown_at >= self._interval_s:
                self._shown_at = now
                self._write("\r" + self.counter())

    def _say_fallbacks(self, events: Sequence[CompileEvent]) -> None:
        """Each fallback once, whole, where it happens (it is in the summary again at the end)."""
        for event in fallbacks(events)[self._fallbacks_said:]:
            self._fallbacks_said += 1
            self._write(("\n" if self._tty and self._shown_at is not None else "")
                        + f"fallback: {fallback_line(event)}\n")
            self._shown_at = None if self._tty else self._shown_at

    def counter(self) -> str:
        text = f"{self.served}/{self.total} served"
        return text + (f", {self.failed} failed" if self.failed else "")

    def close(self) -> None:
        """The counter as it ended, and the line ended, so what follows starts on its own."""
        if self._tty and self._shown_at is not None:
            self._write("\r" + self.counter() + "\n")

    def _write(self, text: str) -> None:
        try:
            self._stream.write(text)
            self._stream.flush()
        except (OSError, ValueError):   # the terminal went away (SIGHUP): keep serving
            pass


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
