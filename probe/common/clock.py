"""One clock for a session: seconds since the session started, on time.perf_counter()."""

from __future__ import annotations

import time


class SessionClock:
    def __init__(self, start: float | None = None) -> None:
        self.start = time.perf_counter() if start is None else start

    def now_s(self) -> float:
        return time.perf_counter() - self.start

    def to_session_s(self, perf_counter_value: float) -> float:
        return perf_counter_value - self.start
