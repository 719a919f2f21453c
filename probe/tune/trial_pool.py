"""Where `tune --search quick|exhaustive` measures its trials: here, one at a time
(`SerialPool`), or with `--ray` several at once, each a Ray task on a node slot of its own
(probe/tune/ray_pool.py). The search starts a trial and hears it finish, with its
`Measured` or the exception that ended it; with several in flight it merges each result as it
arrives (Optuna's ask/tell keeps several trials asked and not yet told)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Protocol, Union

from probe.tune.search import Measured
from probe.tune.tuned_settings import Setup

# evaluate(setup, label, control): measure `setup`, alternated with its control when it has one
EvaluateSetup = Callable[[Setup, str, Union[Setup, None]], Measured]
Outcome = Union[Measured, Exception]


class TrialPool(Protocol):
    @property
    def width(self) -> int:
        """How many trials it measures at once."""
        ...

    def start(self, ticket: int, setup: Setup, label: str, control: Setup | None) -> None:
        """Begin measuring `setup` alternated with `control` (None: alone)."""
        ...

    def finished(self) -> list[tuple[int, Outcome]]:
        """Wait for at least one started trial to end: each (ticket, outcome), as they
        ended; [] when a stop came first (what was in flight is abandoned)."""
        ...


@dataclass
class SerialPool:
    """One trial at a time, measured in this process when the search waits for it."""
    evaluate: EvaluateSetup
    _pending: list[tuple[int, Setup, str, Setup | None]] = field(default_factory=list)

    @property
    def width(self) -> int:
        return 1

    def start(self, ticket: int, setup: Setup, label: str, control: Setup | None) -> None:
        self._pending.append((ticket, setup, label, control))

    def finished(self) -> list[tuple[int, Outcome]]:
        if not self._pending:
            return []
        ticket, setup, label, control = self._pending.pop(0)
        try:
            return [(ticket, self.evaluate(setup, label, control))]
        except Exception as exc:  # noqa: BLE001 - a config the engine refuses ends only itself
            return [(ticket, exc)]
