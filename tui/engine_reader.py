"""The engine reader: on a worker thread of its own, open the engine link, poll it, and post
what it hears as the app's one message (tui/messages.py), so the event loop never waits on an
engine. What the engines' lifecycle needs (cut over, split, restart) the link decides below
the seam (probe/contract/engine_link.py)."""

from __future__ import annotations

import threading
from typing import Callable

from textual.message import Message
from textual.worker import Worker

from probe.contract.engine_link import EngineFailed, EngineLink
from tui.messages import EngineHeard

POLL_S = 0.2


class EngineReader:
    """`post`: the app's thread-safe post_message; `stopping` ends the reading."""

    def __init__(self, link: EngineLink, post: Callable[[Message], object],
                 stopping: threading.Event) -> None:
        self.link, self.post = link, post
        self._stopping = stopping

    def run(self, worker: Worker[None]) -> None:
        """Until the worker is cancelled or the dashboard stops."""
        lost = False
        try:
            self.link.open()
        except Exception as exc:  # a link that cannot open is shown, never a crash
            self.post(EngineHeard(EngineFailed(f"could not start: {type(exc).__name__}: {exc}")))
            lost = True
        while not (worker.is_cancelled or self._stopping.is_set()):
            try:
                heard = self.link.poll(POLL_S)
            except Exception as exc:  # a broken pipe or a bad message: say so once, go on
                if not lost:
                    self.post(EngineHeard(EngineFailed(
                        f"lost the engine: {type(exc).__name__}: {exc}")))
                lost = True
                self._stopping.wait(POLL_S)
                continue
            lost = False
            if heard is not None:
                self.post(EngineHeard(heard))
