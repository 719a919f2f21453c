"""Two arms of the same requests compared: arm A the config served now, arm B the doctor's next
step applied. For each figure its value in each arm, the delta B − A and a bootstrap 95%
interval of the delta; a verdict on the headline (p95 latency), and, when the interval still
holds 0, how many requests per arm it would take to tell. Torch-free, from records only: each
figure is the one function every view uses (`summarize`, `goodput_rps`, the segment's KV peak).

Why a bootstrap: the headline is a p95 of a few dozen skewed latencies (and goodput a rate),
for which no closed-form standard error holds; resampling the requests makes no assumption
about their distribution and treats every figure alike. Requests are resampled with
replacement within each arm (the arms are independent runs), RESAMPLES times with a fixed
seed, and the interval is the 2.5th–97.5th percentile of the resampled deltas. 2000 resamples:
a percentile interval's ends need about a thousand or more to settle (their Monte-Carlo error
well under the interval's width), and at the few dozen requests a side `--verify` serves they
take about a second.

Requests to tell (when the interval holds 0): the interval's half-width shrinks as 1/√n with
n requests per arm, so the delta observed, if real, is told apart from 0 once the half-width
falls below |delta|: n_needed = ⌈n · (half-width / |delta|)²⌉, n the arms' mean count of
served requests and half-width (hi − lo) / 2; at least n, which did not tell. None when the
delta observed is 0 (nothing to tell apart).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Callable, Mapping, Sequence

import numpy as np

from probe.analysis.slo import goodput_rps
from probe.analysis.summary import summarize
from probe.common.percentile import percentiles
from probe.contract.objective import Slo
from probe.contract.records import RequestRecord

RESAMPLES = 2000
SEED = 0
HEADLINE = "p95_ms"
BETTER, WORSE, UNDECIDED = "better", "worse", "no difference yet"

Figure = Callable[[Sequence[RequestRecord]], "float | None"]


def _ok(records: Sequence[RequestRecord]) -> list[RequestRecord]:
    return [r for r in records if r.ok]


def _latency(q: str) -> Figure:
    return lambda records: getattr(summarize(r.latency_ms for r in _ok(records)), q)


def _kv_peak(records: Sequence[RequestRecord]) -> float | None:
    # the segment's figure (stats.segment_stats: kv_cache_peak_bytes)
    return float(max(r.kv_cache_bytes for r in records)) if records else None


def figures(slo: Slo | None) -> dict[str, tuple[Figure, bool]]:
    """Each compared figure: how it is computed from one arm's records, and whether lower is
    better. goodput only under the session's SLO (without one every request is good and it is
    the throughput)."""
    table: dict[str, tuple[Figure, bool]] = {
        "p50_ms": (_latency("p50"), True), "p95_ms": (_latency("p95"), True),
        "p99_ms": (_latency("p99"), True),
        "ttft_p95_ms": (lambda rs: summarize(r.ttft_ms for r in _ok(rs)).p95, True),
        "tpot_p50_ms": (lambda rs: summarize(r.tpot_ms for r in _ok(rs)).p50, True),
        "kv_peak_bytes": (_kv_peak, True),
    }
    if slo is not None:
        table["goodput_rps"] = ((lambda rs: goodput_rps(rs, slo)), False)
    return table


@dataclass(frozen=True)
class MetricDelta:
    a: float | None
    b: float | None
    ci95: tuple[float, float] | None = None     # None: not resampled (or too few values)

    @property
    def delta(self) -> float | None:
        return None if self.a is None or self.b is None else self.b - self.a

    def as_dict(self) -> dict:
        return {"a": self.a, "b": self.b, "delta": self.delta,
                "ci95": None if self.ci95 is None else list(self.ci95)}


@dataclass(frozen=True)
class Comparison:
    requests_a: int
    requests_b: int
    metrics: Mapping[str, MetricDelta]
    verdict: str
    requests_to_tell: int | None

    def as_dict(self) -> dict:
        return {"requests": {"a": self.requests_a, "b": self.requests_b},
                "metrics": {name: m.as_dict() for name, m in self.metrics.items()},
                "verdict": self.verdict, "requests_to_tell": self.requests_to_tell}


def bootstrap_ci(records_a: Sequence[RequestRecord], records_b: Sequence[RequestRecord],
                 figure: Figure, *, resamples: int = RESAMPLES,
                 seed: int = SEED) -> tuple[float, float] | None:
    """The 95% percentile interval of figure(B*) − figure(A*), A* and B* each arm's requests
    resampled with replacement; None when either arm has fewer than 2 requests."""
    if len(records_a) < 2 or len(records_b) < 2:
        return None
    rng = np.random.default_rng(seed)
    picks_a = rng.integers(0, len(records_a), size=(resamples, len(records_a)))
    picks_b = rng.integers(0, len(records_b), size=(resamples, len(records_b)))
    deltas = []
    for ia, ib in zip(picks_a, picks_b):
        a, b = figure([records_a[i] for i in ia]), figure([records_b[i] for i in ib])
        if a is not None and b is not None:
            deltas.append(b - a)
    if len(deltas) < resamples // 2:       # the figure is missing in most resamples
        return None
    lo, hi = percentiles(deltas, (2.5, 97.5)) or (0.0, 0.0)     # deltas is not empty
    return lo, hi


def judge(metric: MetricDelta, lower_is_better: bool) -> str:
    """better / worse when the interval excludes 0 on that side, else no difference yet."""
    if metric.ci95 is None:
        return UNDECIDED
    lo, hi = metric.ci95
    if hi < 0 or lo > 0:
        return BETTER if (hi < 0) == lower_is_better else WORSE
    return UNDECIDED


def requests_to_tell(metric: MetricDelta, n: float) -> int | None:
    """n · (half-width / |delta|)², rounded up (the module's docstring says why)."""
    delta = metric.delta
    if metric.ci95 is None or not delta or n <= 0:
        return None
    half = (metric.ci95[1] - metric.ci95[0]) / 2
    return max(math.ceil(n * (half / abs(delta)) ** 2), math.ceil(n))


def compare(records_a: Sequence[RequestRecord], records_b: Sequence[RequestRecord], *,
            slo: Slo | None = None, compile_s_a: float | None = None,
            compile_s_b: float | None = None, resamples: int = RESAMPLES,
            seed: int = SEED) -> Comparison:
    """Arm A against arm B. `compile_s_*`: each arm's compile seconds per engine start; they
    are a cost of the engine, not of a request, so they get no interval."""
    table = figures(slo)
    metrics = {name: MetricDelta(figure(records_a), figure(records_b),
                                 bootstrap_ci(records_a, records_b, figure, resamples=resamples,
                                              seed=seed))
               for name, (figure, _) in table.items()}
    if compile_s_a is not None or compile_s_b is not None:
        metrics["compile_s"] = MetricDelta(compile_s_a, compile_s_b)
    headline = metrics[HEADLINE]
    verdict = judge(headline, table[HEADLINE][1])
    served = (len(_ok(records_a)) + len(_ok(records_b))) / 2
    return Comparison(len(records_a), len(records_b), metrics, verdict,
                      requests_to_tell(headline, served) if verdict == UNDECIDED else None)


def laid_end_to_end(passes: Sequence[Sequence[RequestRecord]]) -> list[RequestRecord]:
    """One arm's passes (each a fresh engine, its session clock starting at 0) on one clock,
    each pass starting where the one before ended: so that the span goodput is measured over
    (`serving_span_s`) is the passes' spans added, not their overlap."""
    out: list[RequestRecord] = []
    offset = 0.0
    for records in passes:
        if not records:
            continue
        shift = offset - min(r.start_s for r in records)
        out.extend(_shifted(r, shift) for r in records)
        offset = max(r.end_s for r in out)
    return out


def _shifted(record: RequestRecord, shift: float) -> RequestRecord:
    def moved(t: float | None) -> float | None:
        return None if t is None else t + shift
    return replace(record, arrival_s=record.arrival_s + shift, start_s=record.start_s + shift,
                   end_s=record.end_s + shift, first_token_s=moved(record.first_token_s),
                   last_token_s=moved(record.last_token_s))
