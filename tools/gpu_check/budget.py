"""gpu-check's time budget: the whole check ends within `--budget` seconds (the issue's "under
8 minutes from a cold start"; a lent GPU comes with minutes, not hours). Each section gets a
planned share, run in order; a section may use what is left of the budget less the shares of
the sections after it, so time an early section did not use goes to the later ones. A section
whose allowance is below its minimum is skipped, and the report says so: a skipped section is
not measured, never passed.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable

# Seconds of a 420 s budget, in the order the sections run: the fast ones whose promises
# are yes/no first, then the decode matrix and the batching runs, the dashboard last.
PLAN = {"nvml": 10.0, "host": 25.0, "sigterm": 40.0, "decode": 140.0, "batching": 160.0,
        "dashboard": 45.0}
# Below these a section cannot measure what it is for: the sigterm needs its compile running
# 15 s and up to 10 s to end; the dashboard 30 s of start before its screens.
MINIMUM = {"nvml": 2.0, "host": 10.0, "sigterm": 35.0, "decode": 60.0, "batching": 40.0,
           "dashboard": 40.0}
DEFAULT_BUDGET_S = 420.0


def plan(total_s: float, sections: list[str]) -> dict[str, float]:
    """The planned seconds of each section run, PLAN scaled to `total_s`."""
    weights = {s: PLAN[s] for s in sections}
    whole = sum(weights.values())
    return {s: total_s * w / whole for s, w in weights.items()}


def allowance(left_s: float, planned_after: float) -> float:
    """What a section may take: what is left, less the plan of the sections after it."""
    return max(0.0, left_s - planned_after)


@dataclass
class Budget:
    """`total_s` None: no budget (every section its own flags' limits)."""
    total_s: float | None
    sections: list[str]
    clock: Callable[[], float] = time.monotonic

    def __post_init__(self) -> None:
        self._plan = plan(self.total_s, self.sections) if self.total_s else {}
        self.started = self.clock()

    @property
    def planned(self) -> dict[str, float]:
        return dict(self._plan)

    def left_s(self) -> float | None:
        if self.total_s is None:
            return None
        return self.total_s - (self.clock() - self.started)

    def for_section(self, section: str) -> float | None:
        """Seconds `section` may take now; None without a budget."""
        left = self.left_s()
        if left is None:
            return None
        after = self.sections[self.sections.index(section) + 1:]
        return allowance(left, sum(self._plan[s] for s in after))

    def skip_reason(self, section: str) -> str | None:
        """Why `section` cannot run within the budget; None when it can."""
        seconds = self.for_section(section)
        if seconds is None or seconds >= MINIMUM[section]:
            return None
        return (f"skipped: {seconds:.0f} s of the {self.total_s:.0f} s budget were left for it, "
                f"below the {MINIMUM[section]:.0f} s it needs")
