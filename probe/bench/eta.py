"""The bench's projection of the time left, as its progress lines show it: one that does not
jump, and says so where it cannot know.

The raw figure (each run's estimate, scaled by how the finished runs compared with theirs)
moves in steps: a run that finishes far from its estimate rescales every run after it, and a
run that starts adds its whole estimate at once. issue 49 saw "~124.4 s left", then
"~32:46 left", then "~153.9 s left". The projection shown counts down with the wall clock
and follows the raw figure at a bounded pace:
- between two updates it moves at most `PACE` of itself (or of `FLOOR_S`) per second away
  from the plain countdown;
- when a run has finished since the last update (new information) it may step at most ×2 or
  ÷2 from the countdown, and then follows at that pace;
- where there is nothing to project from, or the work has slipped by more than all the time
  it projected when a run last finished (the runs are slower than anything measured so far),
  it says "unknown" instead of a number, and starts again from the raw figure once a run
  finishes.
"""

from __future__ import annotations

from dataclasses import dataclass

from probe.common.units import fmt_clock

PACE = 0.05         # of the projection, per second: how fast it may drift from a countdown
FLOOR_S = 20.0      # the pace is at least PACE × FLOOR_S seconds per second (1 s/s)
STEP = 2.0          # the most a finished run's news may multiply or divide it by at once


@dataclass(frozen=True)
class Projection:
    left_s: float | None        # None: unknown
    why: str = ""               # what it rests on: "a guess until a run finishes", or why unknown

    def text(self) -> str:
        """ "~2:04 left", "~1:10 left (a guess until a run finishes)", "time left unknown
        (the runs are slower than estimated)" """
        if self.left_s is None:
            return f"time left unknown ({self.why})" if self.why else "time left unknown"
        return f"~{fmt_clock(self.left_s)} left" + (f" ({self.why})" if self.why else "")


def drift_allowed(previous_s: float, dt_s: float) -> float:
    """How far the projection may move from the countdown over `dt_s` without new news."""
    return dt_s * PACE * max(previous_s, FLOOR_S)


def step_range(countdown_s: float, dt_s: float) -> tuple[float, float]:
    """Where the projection may land after a run finished: ×/÷ STEP of the countdown, give or
    take the drift."""
    allowed = drift_allowed(countdown_s, dt_s)
    return max(countdown_s / STEP - allowed, 0.0), countdown_s * STEP + allowed


class Eta:
    """Projections from raw estimates, one per update, on a clock the caller reads."""

    def __init__(self) -> None:
        self._last: Projection = Projection(None, "nothing measured yet")
        self._at_s: float | None = None
        self._informed = 0
        # where the projection last rested on news (or started): (time, seconds left then)
        self._anchor: tuple[float, float] | None = None

    def update(self, now_s: float, raw_left_s: float | None, informed: int, *,
               guess: bool = False) -> Projection:
        """`raw_left_s`: the raw figure now (None: nothing to project from); `informed`: how
        many runs have finished (a rise is news); `guess`: the raw figure rests on no finished
        run (the estimates' own costs)."""
        news = informed > self._informed
        self._informed = max(self._informed, informed)
        previous, at_s = self._last, self._at_s
        self._at_s = now_s
        why = "a guess until a run finishes" if guess else ""
        self._last = self._next(previous, now_s, at_s, raw_left_s, news, why)
        if self._last.left_s is None:
            self._anchor = None
        elif news or self._anchor is None:
            self._anchor = (now_s, self._last.left_s)
        return self._last

    def _next(self, previous: Projection, now_s: float, at_s: float | None,
              raw_left_s: float | None, news: bool, why: str) -> Projection:
        if raw_left_s is None:
            return Projection(None, "nothing to project from")
        raw = max(raw_left_s, 0.0)
        if previous.left_s is None or at_s is None:
            if previous.why == OVERDUE and not news:
                return previous             # known again once a run has finished
            return Projection(raw, why)
        if news:
            countdown = previous.left_s - max(now_s - at_s, 0.0)
            if countdown <= 0.0:
                return Projection(raw, why)
            low, high = step_range(countdown, max(now_s - at_s, 0.0))
            return Projection(min(max(raw, low), high), why)
        dt = max(now_s - at_s, 0.0)
        countdown = max(previous.left_s - dt, 0.0)
        allowed = drift_allowed(previous.left_s, dt)
        shown = min(max(raw, countdown - allowed, 0.0), countdown + allowed)
        if self._overdue(now_s, shown, raw):
            return Projection(None, OVERDUE)
        return Projection(shown, why)

    def _overdue(self, now_s: float, shown: float, raw: float) -> bool:
        """No run has finished, and the work has slipped by more than all the time projected
        when the projection last rested on news (the countdown from then ran out with work
        left, or the time left kept rising): it cannot know."""
        if self._anchor is None or raw <= 0.0:
            return False
        at_s, left_s = self._anchor
        return shown - (left_s - (now_s - at_s)) > max(left_s, FLOOR_S)


OVERDUE = "the runs are slower than estimated; known again when one finishes"
