"""When a run has served enough: its stopping rule, and the paired verdict it rests on.

The figure a bench verdict rests on is a run's warm latency against another run's on the same
request list. Paired by request, it is the mean of log(latency here / that request's median
warm latency in the other run) over this run's warm requests: the request's own size cancels,
what is left is the configs' difference plus the machine's noise. probe/analysis/sequential.py
gives that mean an always-valid confidence sequence (Robbins' normal mixture with the running
variance: an asymptotic confidence sequence) and the verdict: faster or slower beyond the
stated margin (MARGIN, 10%), within noise (inside ±margin), or no difference yet.

The rule (`StopRule`): after the run's first full warm pass, checked after every request, the
run stops once its verdict against every partner that has already finished is settled, or can
no longer settle within the cap; the old request count (`--repeats` passes) stays the cap. A
verdict "can no longer settle" (futility) when, from the second pass, the requests it would need
(ab_compare.requests_to_tell, as `doctor --verify` says it) exceed FUTILE times the cap: that
count scales the interval's half-width as 1/√n, and a confidence sequence narrows slower than
that, so the true need is larger still. Giving up changes no claim — the run says "no
difference yet" with the requests it would need, as it would at the cap — and the interval
stays valid at any stopping time. A run no partner has finished before (a control, the first of
a pair) serves to the cap; a run no verdict reads at all serves one pass. Two configs
interleaved on one engine stop together, after a whole round (`PairRounds`). The other run's
medians are taken as exact: its noise is the smaller part (it is a median of several passes),
and it is the same for both of its partners.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Mapping, Sequence

from probe.analysis.ab_compare import MetricDelta, requests_to_tell
from probe.analysis.sequential import (
    ALPHA,
    MARGIN,
    UNDECIDED,
    Interval,
    decide,
    distance_to_decide,
    last_interval,
)
from probe.common.percentile import median
from probe.contract.records import RequestRecord

SEQUENTIAL, FIXED = "sequential", "fixed"
STOPPING = (SEQUENTIAL, FIXED)
# what each paired figure reads of a record (the verdict's metric → a per-request value)
# (a p95 is a figure of whole passes, not of a request: its verdict keeps the repeats' ranges)
PER_REQUEST = {"latency_p50_ms": "latency_ms", "tpot_ms": "tpot_ms"}
# a verdict needing more than this many caps' requests cannot settle within the cap: give up,
# though not before FUTILE_PASSES warm passes. The estimate swings while the mean sits near a
# margin edge: replayed on the last full study's records (t5-small, 46 runs), giving up from the
# first pass cut E3's dynamic=on short at 40 of the 81 requests that settled it "faster" (even
# at 10× the cap), and 1× the cap from the second pass cut bf16's "within noise" at 80 of 114;
# 2× from the second pass cut no run that would have settled, and saved 373 s.
FUTILE, FUTILE_PASSES = 2.0, 2
# why a run's warm passes ended (Stopping.reason)
SETTLED, GAVE_UP, ONE_PASS, CAP = "settled", "futile", "one pass", "cap"


def request_of(record: RequestRecord) -> str:
    """The request list's id of a served record ("r12@pass 2/3" → "r12")."""
    return record.id.split("@", 1)[0]


def medians(records: Sequence[RequestRecord], attribute: str = "latency_ms"
            ) -> dict[str, float]:
    """Each request's median warm value over the passes that served it."""
    by_request: dict[str, list[float]] = {}
    for record in records:
        value = getattr(record, attribute)
        if record.ok and value:
            by_request.setdefault(request_of(record), []).append(float(value))
    return {request: found for request, values in by_request.items()
            if (found := median(values)) is not None}


def log_ratios(records: Sequence[RequestRecord], reference: Mapping[str, float],
               attribute: str = "latency_ms") -> list[float]:
    """log(value here / the reference's for the same request), in serving order."""
    out = []
    for record in records:
        value, other = getattr(record, attribute), reference.get(request_of(record))
        if record.ok and value and other:
            out.append(math.log(float(value) / other))
    return out


@dataclass(frozen=True)
class Paired:
    """This run against one other on one figure: the interval on the mean log ratio, the
    verdict it gives, and the requests it would need when unsettled."""
    partner: str
    interval: Interval | None
    verdict: str
    requests_to_tell: int | None = None

    @property
    def decided(self) -> bool:
        return self.verdict != UNDECIDED

    def futile(self, cap: int) -> bool:
        """Unsettled, and would need over FUTILE × the cap's requests to settle."""
        return (not self.decided and self.requests_to_tell is not None
                and self.requests_to_tell > FUTILE * cap)

    @property
    def ratio(self) -> float | None:
        return None if self.interval is None else math.exp(self.interval.mean)

    def ratio_range(self) -> tuple[float, float] | None:
        i = self.interval
        if i is None or not (math.isfinite(i.lo) and math.isfinite(i.hi)):
            return None
        return math.exp(i.lo), math.exp(i.hi)

    def as_dict(self) -> dict:
        return {"partner": self.partner, "verdict": self.verdict,
                "interval": None if self.interval is None else self.interval.as_dict(),
                "ratio": self.ratio, "ratio_range": self.ratio_range(),
                "requests_to_tell": self.requests_to_tell}


def paired(partner: str, records: Sequence[RequestRecord], reference: Mapping[str, float],
           attribute: str = "latency_ms") -> Paired:
    interval = last_interval(log_ratios(records, reference, attribute), alpha=ALPHA)
    verdict = decide(interval, MARGIN)
    needed = None
    if verdict == UNDECIDED and interval is not None and math.isfinite(interval.lo):
        distance = distance_to_decide(interval, MARGIN)
        needed = requests_to_tell(MetricDelta(0.0, distance, (interval.lo, interval.hi)),
                                  interval.n)
    return Paired(partner, interval, verdict, needed)


@dataclass(frozen=True)
class StopRule:
    """Stop once settled against every finished partner (key → its per-request medians), or,
    from the FUTILE_PASSES-th pass, once every verdict still open is futile against `cap` warm
    requests; not before `min_requests` warm requests (the first full pass). `alone`: no
    verdict reads the run, so its first pass is all it serves."""
    partners: Mapping[str, Mapping[str, float]]
    min_requests: int
    whole: bool = False             # serve every pass: a verdict on the repeats' range reads it
    cap: int | None = None          # the run's cap, for futility (None: never give up)
    alone: bool = False

    def stops(self, records: Sequence[RequestRecord]) -> bool:
        return self.ending(records) is not None

    def ending(self, records: Sequence[RequestRecord]) -> str | None:
        """Why the run stops now (SETTLED, GAVE_UP, ONE_PASS), or None: serve on."""
        if self.whole or len(records) < self.min_requests:
            return None
        if self.alone:
            return ONE_PASS
        if not self.partners:
            return None
        found = self.against(records)
        if all(p.decided for p in found):
            return SETTLED
        if (self.cap is not None and len(records) >= FUTILE_PASSES * self.min_requests
                and all(p.decided or p.futile(self.cap) for p in found)):
            return GAVE_UP
        return None

    def against(self, records: Sequence[RequestRecord]) -> tuple[Paired, ...]:
        return tuple(paired(key, records, reference)
                     for key, reference in sorted(self.partners.items()))


@dataclass(frozen=True)
class PairRounds:
    """Two configs interleaved on one engine over the same requests (E5's cache on and off).
    Checked after each round, in which both served one pass, they stop once the verdict
    between them is settled both ways round (each one's requests against the other's medians,
    whichever way its section reads the pair), or, from the FUTILE_PASSES-th round, once it can
    no longer settle within the cap. Per round, not per request: both keep the same number of
    passes, so the interleaving stays balanced."""
    first: str
    second: str
    count: int                  # requests a pass
    cap: int                    # each config's cap: --repeats passes

    def rules(self, served: Mapping[str, Sequence[RequestRecord]]) -> dict[str, StopRule]:
        return {key: StopRule({other: medians(served[other])}, min_requests=self.count,
                              cap=self.cap)
                for key, other in ((self.first, self.second), (self.second, self.first))}

    def ending(self, served: Mapping[str, Sequence[RequestRecord]]) -> str | None:
        """SETTLED, GAVE_UP (futile, or settled one way round only), or None: serve on."""
        endings = [rule.ending(served[key]) for key, rule in self.rules(served).items()]
        if None in endings:
            return None
        return SETTLED if all(e == SETTLED for e in endings) else GAVE_UP

    def against(self, served: Mapping[str, Sequence[RequestRecord]], key: str
                ) -> tuple[Paired, ...]:
        return self.rules(served)[key].against(served[key])


@dataclass(frozen=True)
class Stopping:
    """How a run ended, for report.md: warm requests served of its cap, and why it stopped."""
    rule: str                           # SEQUENTIAL or FIXED
    served: int                         # warm requests served
    cap: int                            # the old count: --repeats passes
    reason: str                         # SETTLED, GAVE_UP, ONE_PASS, CAP, "fixed size",
                                        # "nothing to pair", "interleaved", "whole passes"
    against: tuple[Paired, ...] = field(default_factory=tuple)

    def text(self) -> str:
        if self.reason == "settled":
            said = "; ".join(f"{p.verdict} vs {p.partner}" for p in self.against)
            return f"settled: {said}"
        if self.reason in (CAP, GAVE_UP) and self.against:
            open_ = "; ".join(
                f"no difference yet vs {p.partner}"
                + (f" (needs ~{p.requests_to_tell} requests)" if p.requests_to_tell else "")
                for p in self.against if not p.decided)
            if self.reason == CAP:
                return f"cap: {open_}"
            decided = "".join(f"; {p.verdict} vs {p.partner}" for p in self.against
                              if p.decided)
            return f"gave up: {open_}, over {FUTILE:g}× the cap of {self.cap}{decided}"
        return {"fixed size": "fixed size (--stopping fixed)",
                ONE_PASS: "one pass: no verdict reads it",
                "nothing to pair": "cap: no finished run to compare with yet",
                "interleaved": "cap: interleaved with other configs on one engine",
                "whole passes": "cap: a verdict on its repeats' range reads it"}.get(
                    self.reason, self.reason)

    def as_dict(self) -> dict:
        return {"rule": self.rule, "served": self.served, "cap": self.cap,
                "reason": self.reason, "text": self.text(),
                "against": [p.as_dict() for p in self.against]}
