"""Compile time per request, one definition for every view: the seconds a request waited on
compiles from its arrival to its end — inside its own service and queued behind another
request's compile — which is the doctor's `compile` cause for that request. A record's
`compile_stall_ms` counts only the first part (the compiles its own service ran); a request
queued behind a compile reads 0 there, so every view that prints it says "own service"."""

from __future__ import annotations

from typing import Sequence

from probe.analysis.attribution import split_request
from probe.analysis.timeline import compile_spans
from probe.contract.records import CompileEvent, RequestRecord


def compile_wait_ms(record: RequestRecord, events: Sequence[CompileEvent]) -> float:
    """Milliseconds of `events`' compiles (overlaps once) between the request's arrival and its
    end: attribution's `compile` cause of this one request."""
    if not events:
        return 0.0
    return split_request(record, compile_spans(events)).ms["compile"]
