"""What the HTTP app knows of the engine that serves it, and nothing else: submit a request,
hear its tokens and its record, cancel it, read readiness and metrics. The app takes any
`ServedEngine`: the engine's own host (engine_host.py), or a fake in tests; a dashboard that
attaches to a server later (issue 53) talks through a seam of the same width. Torch-free."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Protocol

from probe.contract.records import RequestRecord


@dataclass(frozen=True)
class Limits:
    """What a request may ask for: the engine's cache lengths and the queue's bound."""
    model: str                  # the name clients give in `model`
    max_prompt_tokens: int
    max_tokens: int
    max_queue: int


@dataclass(frozen=True)
class Ask:
    """One checked completion request, as the engine takes it."""
    request_id: str
    prompt: str
    prompt_tokens: int
    max_tokens: int
    stream: bool
    arrived_s: float            # time.perf_counter() when the server began to read it


@dataclass(frozen=True)
class Tokens:
    """Tokens made since the last Tokens of this request (streaming only)."""
    ids: tuple[int, ...]


@dataclass(frozen=True)
class Done:
    """The request's record, as the session keeps it (a failed one carries its error)."""
    record: RequestRecord


Listener = Callable[[Tokens | Done], None]      # called from the engine's thread
# what a cancelled request's record says
CANCELLED = "cancelled: the client closed the connection"
STOPPED = "cancelled: the server stopped before it was served"


class Refused(Exception):
    """The engine cannot take the request now: `status` 429 (queue full) or 503 (not ready,
    draining); `retry_after_s` for 429."""

    def __init__(self, status: int, message: str, retry_after_s: int | None = None) -> None:
        super().__init__(message)
        self.status, self.message, self.retry_after_s = status, message, retry_after_s


class ServedEngine(Protocol):
    limits: Limits

    @property
    def state(self) -> str:
        """loading, warming, ready, draining, stopped or failed: why /health is not ready."""
        ...

    def count_prompt(self, prompt: str) -> int:
        """The prompt's tokens as the engine will see them (before it is cut to the limit)."""
        ...

    def submit(self, ask: Ask, listener: Listener) -> None:
        """Queue `ask`; the listener hears its tokens (if it streams) and then its Done.
        Raises Refused."""
        ...

    def cancel(self, request_id: str, why: str | None = None) -> None:
        """Nobody waits for it any more: out of its slot at the next step; `why` goes in its
        record (default: its client left)."""
        ...

    def decode(self, ids: tuple[int, ...]) -> str:
        ...

    def metrics(self) -> bytes:
        """The Prometheus exposition, the exporter's names."""
        ...

    def in_flight(self, request_id: str) -> bool:
        """Taken already: in flight, or served in this session (one record an id)."""
        ...
