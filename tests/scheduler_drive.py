"""Serving a list of requests through a ContinuousScheduler to the end, as the serving loop
does: each step, as many join as there are free slots (at most `per_join`), then one step."""

from __future__ import annotations

from probe.contract.records import RequestRecord


def serve_everything(scheduler, requests, per_join: int | None = None) -> list[RequestRecord]:
    return scheduler.serve_all(list(requests), per_join)
