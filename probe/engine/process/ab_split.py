"""Arm A of the live A/B, in the serving engine's process. From a Split on, every other arrival
of the trace is handed to arm B (a Diverted event that the dashboard's engine handle relays to
the side engine), so each arm sees the trace's rate, halved. When arm B stops, its records are
taken into this engine's session from the journal it wrote them to, and what it left unserved
is served here, with its own arrival times: nothing dispatched is lost."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any, Callable

from probe.common.clock import SessionClock
from probe.common.errors import BadInput
from probe.contract.protocol import ArmRequest, Diverted
from probe.session_store.journal import JournaledSession
from probe.session_store.journal_reader import read_journal
from workloads.replayer import ScheduledRequest

if TYPE_CHECKING:   # the serving loop imports torch; this module is imported before it
    from probe.engine.serving import ServingLoop


class Splitter:
    """The serving loop's `divert`: arrivals 1, 3, 5, … after the split stay (arm A), 2, 4, 6, …
    go to arm B. One that cannot be sent (the dashboard is gone) is served here."""

    def __init__(self, clock: SessionClock, send: Callable[[Any], bool]) -> None:
        self._clock, self._send = clock, send
        self._lock = threading.Lock()
        self._arrivals = 0
        self.diverted: dict[int, ScheduledRequest] = {}    # by seq: what B was handed

    def __call__(self, scheduled: ScheduledRequest) -> bool:
        with self._lock:
            self._arrivals += 1
            if self._arrivals % 2:
                return False
        handed = ArmRequest(scheduled.seq, scheduled.request,
                            self._clock.to_session_s(scheduled.scheduled_s))
        if not self._send(Diverted(handed)):
            return False
        with self._lock:
            self.diverted[scheduled.seq] = scheduled
        return True


def end_split(loop: ServingLoop, splitter: Splitter, journal_path: str,
              arm_config_id: str) -> int:
    """Arm B has stopped: every arrival is served here again; B's records join this engine's
    session (held, not journaled twice); the requests B was handed and did not record are
    queued here first. Returns how many."""
    loop.divert = None
    session = loop.engine.session
    journal = read_journal(journal_path)
    if journal is None:
        raise BadInput(f"{journal_path}: the session journal has no session yet")
    recorded = {r.seq for r in journal.data.records}
    if isinstance(session, JournaledSession):
        held = {r.seq for r in session.freeze().records}
        known = set(session.events())
        session.take_in([r for r in journal.data.records
                         if r.config_id == arm_config_id and r.seq not in held],
                        [e for e in journal.data.events
                         if e.config_id == arm_config_id and e not in known])
    left = [s for seq, s in sorted(splitter.diverted.items()) if seq not in recorded]
    loop.carry(left)
    return len(left)
