"""The clock a running compile is shown on, shared by the status bar and the recompilation
feed: the engine's session clock when it built the latest live view, plus the local time since
that live view arrived (a compile holds the engine's GIL, so it publishes rarely meanwhile).
It stops at the live view's time once the engine is not running: a dead engine compiles
nothing, and a saved session is not live."""

from __future__ import annotations

from typing import Callable

from probe.contract.live import LiveView
from tui import derive

STOPPED_STATES = frozenset({"failed", "read-only"})
TICK_S = 1.0


class CompileClock:
    def __init__(self, clock: Callable[[], float]) -> None:
        self._clock = clock
        self._view: LiveView | None = None
        self._arrived_at = clock()

    def arrived(self, view: LiveView | None) -> None:
        """Call when a live view arrives; the same view again changes nothing."""
        if view is not self._view:
            self._view, self._arrived_at = view, self._clock()

    def now_s(self, view: LiveView, engine_state: str) -> float:
        """The engine's session clock now."""
        local = 0.0 if engine_state in STOPPED_STATES else self._clock() - self._arrived_at
        return derive.engine_now_s(view, local)

    def stall_s(self, view: LiveView | None, engine_state: str) -> float | None:
        """The waiting request's compile stall so far (its earlier compiles included, so it
        only grows while that request waits); None when nothing compiles."""
        if view is None or view.compiling is None:
            return None
        return view.compiling.stall_s(self.now_s(view, engine_state))

    def elapsed_s(self, view: LiveView | None, engine_state: str) -> float | None:
        """How long the running compile itself has run; None when nothing compiles."""
        if view is None or view.compiling is None:
            return None
        return max(self.now_s(view, engine_state) - view.compiling.since_s, 0.0)


def whole_seconds(seconds: float) -> str:
    """A running clock's reading: whole seconds elapsed, "23 s" until the 24th has passed."""
    return f"{int(seconds)} s"
