"""The one message the engine reader thread posts to the app (thread-safe `post_message`):
what the engine link heard, a frozen value of probe.contract.engine_link's `Heard`, carried
as is. The app dispatches on its type in one place (tui/engine_events.py); nothing is
re-declared here.

Defined here, not in a widget, because its sender is a worker thread."""

from __future__ import annotations

from textual.message import Message

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
