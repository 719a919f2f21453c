"""The messages the dashboard's threads post to the app (thread-safe `post_message`): the
engine reader's `EngineHeard`, what the engine link heard, a frozen value of
probe.contract.engine_link's `Heard` carried as is (the app dispatches on its type in one
place, tui/engine_events.py; nothing is re-declared here), and the live A/B's comparison.

Defined here, not in a widget, because their senders are worker threads."""

from __future__ import annotations

from textual.message import Message

from probe.analysis.ab_compare import Comparison
from probe.contract.engine_link import EngineLive, EngineLoading, Heard

COALESCED = (EngineLive, EngineLoading)     # only the newest of these matters


class EngineHeard(Message):
    def __init__(self, heard: Heard) -> None:
        super().__init__()
        self.heard = heard

    def can_replace(self, message: Message) -> bool:
        """A queued older live view (or loading line) is dropped for the newest."""
        return (isinstance(message, EngineHeard) and isinstance(self.heard, COALESCED)
                and type(message.heard) is type(self.heard))


class ABCompared(Message):
    """The arms compared on the thread, for the A/B asked at `asked_s`, on `counts` requests
    (tui/live_ab_run.py)."""

    def __init__(self, asked_s: float, comparison: Comparison, counts: tuple[int, int]) -> None:
        super().__init__()
        self.asked_s = asked_s
        self.comparison = comparison
        self.counts = counts
