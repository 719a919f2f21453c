"""The dashboards attached to one server: who steers, who watches, and each one's events not
yet fetched. The first to attach steers; the others watch, and each is told which it is (a
`Role`). A dashboard that stops fetching for DROP_S is dropped and holds nothing: if it
steered, nobody does until a watcher asks (`Steer`). Events are numbered per link; a fetch
says the last number it got, so a fetch lost on the way is fetched again. A link keeps only
the newest live view not yet fetched (a slow dashboard skips views, never the other events).
Each event is held as its JSON, made once by the thread that publishes it (a live view is
large: the event loop only joins bytes). Thread-safe: the engine's threads publish, the event
loop fetches. Torch-free."""

from __future__ import annotations

import itertools
import secrets
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from probe.contract.engine_link import Heard, Role
from probe.server.attach.wire import dumps, encode_heard

DROP_S = 5.0                # a link not fetched for this long is dropped
MAX_HELD = 1000             # events a link holds unfetched (the oldest go first)


@dataclass(frozen=True)
class Held:
    seq: int
    live: bool              # a live view (EngineLive): a newer one replaces it
    json: bytes             # {"kind": ..., ...}: the event as the wire carries it


def _encoded(heard: Heard) -> tuple[bool, bytes]:
    doc = encode_heard(heard)
    return doc["kind"] == "EngineLive", dumps(doc)


@dataclass
class _Link:
    link_id: str
    name: str               # "dashboard 2": how the others are told of it
    seen: float
    events: deque[Held] = field(default_factory=lambda: deque(maxlen=MAX_HELD))
    next_seq: int = 1


class Board:
    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._links: dict[str, _Link] = {}
        self._steering: str | None = None
        self._numbers = itertools.count(1)
        self.attached = threading.Event()    # set while at least one link is attached

    # -- links ----------------------------------------------------------------------------------
    def attach(self) -> tuple[str, bool]:
        """A new link: its id, and whether it steers (nobody did)."""
        self.drop_stale()
        with self._lock:
            link = _Link(secrets.token_urlsafe(16), f"dashboard {next(self._numbers)}",
                         self._clock())
            self._links[link.link_id] = link
            steers = self._steering is None
            if steers:
                self._steering = link.link_id
            self.attached.set()
            self._put(link, self._role(link))
        return link.link_id, steers

    def detach(self, link_id: str) -> None:
        """The dashboard closed its link (`q`): what it held is let go at once."""
        with self._lock:
            self._drop(link_id)

    def steers(self, link_id: str) -> bool:
        with self._lock:
            return self._steering == link_id

    def known(self, link_id: str) -> bool:
        with self._lock:
            return link_id in self._links

    def steer(self, link_id: str) -> bool:
        """A watcher asks to steer: granted only when nobody does. Every link hears its role."""
        with self._lock:
            if link_id not in self._links:
                return False
            if self._steering not in (None, link_id):
                self._put(self._links[link_id], self._role(self._links[link_id]))
                return False
            self._steering = link_id
            for link in self._links.values():
                self._put(link, self._role(link))
            return True

    def drop_stale(self) -> list[str]:
        """Drop the links not fetched for DROP_S; returns their ids."""
        with self._lock:
            now = self._clock()
            stale = [i for i, link in self._links.items() if now - link.seen > DROP_S]
            for link_id in stale:
                self._drop(link_id)
        return stale

    def _drop(self, link_id: str) -> None:
        if self._links.pop(link_id, None) is None:
            return
        if self._steering == link_id:
            self._steering = None
            for link in self._links.values():
                self._put(link, self._role(link))
        if not self._links:
            self.attached.clear()

    def _role(self, link: _Link) -> Role:
        if self._steering == link.link_id:
            watchers = len(self._links) - 1
            return Role(True, f"{link.name} steers this server" + (
                f" ({watchers} other dashboard{'s' * (watchers != 1)} watching)"
                if watchers else ""))
        if self._steering is None:
            return Role(False, f"{link.name} watches; nobody steers now: ask to steer to "
                               f"take over")
        return Role(False, f"{link.name} watches: {self._links[self._steering].name} steers; "
                           f"its keys are refused here until it leaves")

    # -- events ---------------------------------------------------------------------------------
    def tell(self, link_id: str, heard: Heard) -> None:
        encoded = _encoded(heard)
        with self._lock:
            link = self._links.get(link_id)
            if link is not None:
                self._put(link, encoded)

    def publish(self, heard: Heard) -> None:
        """To every attached dashboard."""
        if not self.attached.is_set():
            return
        encoded = _encoded(heard)
        with self._lock:
            for link in self._links.values():
                self._put(link, encoded)

    def _put(self, link: _Link, heard: Heard | tuple[bool, bytes]) -> None:
        live, text = _encoded(heard) if not isinstance(heard, tuple) else heard
        if live:        # only the newest unfetched view is kept
            kept = [e for e in link.events if not e.live]
            if len(kept) != len(link.events):
                link.events.clear()
                link.events.extend(kept)
        link.events.append(Held(link.next_seq, live, text))
        link.next_seq += 1

    def fetch(self, link_id: str, after: int) -> list[Held] | None:
        """The link's events numbered above `after` (those up to it were received: let go);
        None when the link is not attached (dropped, or never was)."""
        with self._lock:
            link = self._links.get(link_id)
            if link is None:
                return None
            link.seen = self._clock()
            while link.events and link.events[0].seq <= after:
                link.events.popleft()
            return list(link.events)

    def touch(self, link_id: str) -> None:
        with self._lock:
            link = self._links.get(link_id)
            if link is not None:
                link.seen = self._clock()

    def count(self) -> int:
        with self._lock:
            return len(self._links)
