"""Serving a list of requests through a ContinuousScheduler to the end, as the serving loop
does: each step, as many join as there are free slots (at most `per_join`), then one step."""

from __future__ import annotations

from probe.contract.records import RequestRecord


def serve_everything(scheduler, requests, per_join: int | None = None) -> list[RequestRecord]:
    waiting, records = list(requests), []
    while waiting or scheduler.active:
        room = scheduler.free_slots if per_join is None else min(scheduler.free_slots, per_join)
        joiners = waiting[:max(0, room)]
        del waiting[:len(joiners)]
        if joiners:
            records += scheduler.join(joiners)
        records += scheduler.step()
    return records
