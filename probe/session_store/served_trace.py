"""A session's arrivals as a trace (`infertop trace from-session`): each request at its
arrival time on the session clock, with its input tokens, its output tokens and its id, so
that `replay` offers the same traffic again: serve, capture, replay, tune, serve the winner.
A failed request is left out (its record does not keep how many tokens it asked for), and the
prompts' texts are not kept in a session: the replay draws inputs of the same lengths.
Torch-free."""

from __future__ import annotations

from collections.abc import Sequence

from probe.contract.records import RequestRecord
from workloads.trace_records import Trace, TraceRequest


def served_trace(records: Sequence[RequestRecord], name: str) -> tuple[Trace, int]:
    """The trace of the served requests in arrival order, and how many failed ones it left
    out. Times start at 0 ms, kept to the microsecond."""
    served = sorted((r for r in records if r.ok and r.output_tokens > 0),
                    key=lambda r: (r.arrival_s, r.seq))
    first = served[0].arrival_s if served else 0.0
    requests = tuple(TraceRequest(timestamp_ms=round((r.arrival_s - first) * 1e3, 3),
                                  input_length=max(1, r.input_tokens),
                                  output_length=r.output_tokens, id=r.id) for r in served)
    return Trace(name, requests, source=name), len(records) - len(served)
