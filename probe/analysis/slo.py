"""A service-level objective (`--slo ttft=1s,tpot=60ms,latency=8s`) and what it makes of records:
which requests are good, goodput and attainment. Torch-free: the dashboard, `snapshot show` and
the exporter read it as the engine does.

Definitions (one each, used by every view):
- a request is **good** when it was served (no error) and meets every bound the SLO gives;
  a bound the SLO leaves out does not apply.
- a served request with **no TTFT** (it produced no token) fails a TTFT bound: nothing shows
  it was met. A request with **no TPOT** (one output token: there is no time between tokens)
  passes a TPOT bound: there is nothing to bound.
- **goodput** is good requests, and their output tokens, per second of `serving_span_s` over
  every record of the set (failed ones included): the span throughput is measured over, so
  goodput ≤ throughput always.
- **SLO attainment** is good ÷ all records of the set (a failed request counts as not good).
"""

from __future__ import annotations

from typing import Sequence

from probe.analysis.span import serving_span_s
from probe.contract.figures import NO_GOODPUT, Goodput
from probe.contract.objective import Slo
from probe.contract.records import RequestRecord


def good_requests(records: Sequence[RequestRecord], slo: Slo) -> list[RequestRecord]:
    return [r for r in records if slo.meets(r)]


def goodput_rps(records: Sequence[RequestRecord], slo: Slo) -> float | None:
    """Good requests per second of `serving_span_s` (the throughput's own span)."""
    span = serving_span_s(records)
    return len(good_requests(records, slo)) / span if span > 0 else None


def goodput_tokens_per_s(records: Sequence[RequestRecord], slo: Slo) -> float | None:
    """Output tokens of good requests per second of the same span."""
    span = serving_span_s(records)
    return sum(r.output_tokens for r in good_requests(records, slo)) / span if span > 0 else None


def slo_attainment(records: Sequence[RequestRecord], slo: Slo) -> float | None:
    """Good ÷ all records (failed ones count as not good); None for no records."""
    return len(good_requests(records, slo)) / len(records) if records else None


def goodput(records: Sequence[RequestRecord], slo: Slo | None) -> Goodput:
    if slo is None:
        return NO_GOODPUT
    return Goodput(goodput_rps(records, slo), goodput_tokens_per_s(records, slo),
                   slo_attainment(records, slo))


