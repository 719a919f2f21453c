"""Messages the engine reader thread posts to the app (thread-safe `post_message`).

They are defined here, not in a widget, because their sender is a worker thread.
"""

from __future__ import annotations

from textual.message import Message

from probe.contract.live import LiveView


class EngineLive(Message):
    """A new live view. Coalesces: a queued older one is dropped for the newest."""

    def __init__(self, view: LiveView) -> None:
        super().__init__()
        self.view = view

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, EngineLive)


class EngineLoading(Message):
    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, EngineLoading)


class EngineFailed(Message):
    """The engine process died or could not start; the dashboard keeps what it has."""

    def __init__(self, error: str) -> None:
        super().__init__()
        self.error = error


class EngineRestarted(Message):
    pass


class ReplayFinished(Message):
    pass


class SnapshotSaved(Message):
    def __init__(self, path: str) -> None:
        super().__init__()
        self.path = path


class SnapshotFailed(Message):
    def __init__(self, path: str, error: str) -> None:
        super().__init__()
        self.path = path
        self.error = error
