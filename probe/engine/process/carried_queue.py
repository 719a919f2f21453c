"""The requests a stopped engine held, dispatched again to its successor (restart_carry):
the same trace request, the same seq and the same arrival time on the session clock, so the
record it gets is the one it would have had, its queue wait counting the restart."""

from __future__ import annotations

from typing import Sequence

from probe.common.clock import SessionClock
from probe.session_store.journal import Dispatch
from workloads.replayer import ScheduledRequest
from workloads.trace_records import Trace


def scheduled_again(held: Sequence[Dispatch], trace: Trace,
                    clock: SessionClock) -> list[ScheduledRequest]:
    requests = trace.requests
    if not requests:
        return []
    return [ScheduledRequest(seq=d.seq, request=requests[d.seq % len(requests)],
                             scheduled_s=clock.start + d.arrival_s) for d in held]
