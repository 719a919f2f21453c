"""The span a set of requests took to serve: the one denominator of throughput, tokens/s and
goodput (its own module so that stats and slo both read it without importing each other)."""

from __future__ import annotations

from typing import Sequence

from probe.contract.records import RequestRecord


def serving_span_s(records: Sequence[RequestRecord]) -> float:
    """Last end − first start over every record of the set, failed ones included: the time the
    set took to serve, whatever ran concurrently inside it."""
    if not records:
        return 0.0
    return max(r.end_s for r in records) - min(r.start_s for r in records)
