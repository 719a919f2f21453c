"""Every verdict the report gives, in one place: one run against another on a warm latency
figure, paired by request with an always-valid interval (probe/runs/stopping.py: the same
verdict its stopping rule settled), else one spread against another ("within noise" when the
repeats overlap or the machine itself moved more); and why a run cannot be compared."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Iterable

from probe.analysis.sequential import FASTER, MARGIN, SLOWER, UNDECIDED, WITHIN, Interval, decide
from probe.runs.results import Outcome, RunResult
from probe.runs.spread import Spread
from probe.runs.stopping import PER_REQUEST, medians, paired

DRIFT_TOLERANCE = 1.5    # calibration moving less than this between runs is ignored


@dataclass(frozen=True)
class Comparison:
    ratio: float | None          # a / b of the medians
    verdict: str                 # "faster" | "slower" | "within noise" | "noise unknown" | "n/a"
    text: str


def compare(a: Spread, b: Spread, *, lower_is_better: bool = True,
            better: str = "faster", worse: str = "slower") -> Comparison:
    """How `a` stands against `b`. With two or more repeats each, overlapping ranges are
    reported as within noise, whatever the medians say. With a single repeat on either side the
    difference is reported, marked as of unknown noise."""
    if a.median is None or b.median is None or b.median == 0 or a.median == 0:
        return Comparison(None, "n/a", "n/a")
    ratio = a.median / b.median
    factor = (1 / ratio) if lower_is_better else ratio     # > 1: a is better
    text = _factor_text(factor, better, worse)
    if a.n >= 2 and b.n >= 2 and a.overlaps(b):
        return Comparison(ratio, "within noise", f"within noise ({text} by the medians)")
    if a.n < 2 or b.n < 2:
        return Comparison(ratio, "noise unknown", f"{text} (one repeat: noise not measured)")
    return Comparison(ratio, better if factor > 1 else worse, text)


def _factor_text(factor: float, better: str, worse: str) -> str:
    if factor >= 1:
        return f"{factor:.2f}× {better}"
    return f"{1 / factor:.2f}× {worse}"


def speed_drift(calibration_ms: Iterable[float]) -> float | None:
    """How much the machine's speed moved: max / min of calibration times (a fixed small
    workload timed before and after each run). None: not measured."""
    values = [v for v in calibration_ms if v]
    return max(values) / min(values) if len(values) >= 2 else None


def machine_drift(*outcomes: Outcome) -> float | None:
    """The speed drift across these runs: how far apart their fastest calibrations are (the
    machine's speed when nothing else got in the way; a load that lasts a whole run raises
    all its samples, the fastest too). Not the median: with three to five samples a run, the
    noisy moments of a busy VM set it. On the 2-core Zen 4 VM the workload reads 2.31-2.42 ms
    quiet and 2.9-3.9 ms in such moments; by medians reduce-overhead ([3.29, 3.39, 2.37, 3.05])
    read 1.36x slower than eager ([2.33, 2.33, 2.35]), by the fastest 1.02x; on the Zen 3 VM the
    medians (4.87 against 3.24 ms) turned a paired x0.77 into "within noise" while its passes
    ran as fast as the default mode's."""
    return speed_drift(found for r in outcomes if isinstance(r, RunResult)
                       if (found := min((v for v in r.calibration_ms if v), default=None))
                       is not None)


@dataclass(frozen=True)
class Versus:
    """One run against another on one warm figure."""
    metric: str
    ratio: float | None
    verdict: str
    text: str
    machine_drift: float | None

    def as_dict(self) -> dict:
        return asdict(self)


def versus(result: Outcome, control: Outcome, metric: str = "latency_p50_ms",
           lower_is_better: bool = True) -> Versus:
    """`result` against `control`. Overlapping repeat ranges are noise; so is a difference
    smaller than the machine's own speed change between the two runs (runs of one interleaved
    group share the machine's state, so their comparison needs no such care)."""
    run, against = usable(result), usable(control)
    if isinstance(run, str):
        return Versus(metric, None, "not comparable", run, None)
    if isinstance(against, str):
        return Versus(metric, None, "not comparable", against, None)
    by_request = paired_verdict(run, against, metric) if lower_is_better else None
    c = by_request or compare(run.spread(metric), against.spread(metric),
                              lower_is_better=lower_is_better)
    same_group = bool(run.group and run.group == against.group)
    drift = None if same_group else machine_drift(run, against)
    if (c.verdict in ("faster", "slower") and c.ratio is not None and drift
            and drift > DRIFT_TOLERANCE and max(c.ratio, 1 / c.ratio) < drift):
        return Versus(metric, c.ratio, "within noise",
                      f"within noise: the machine's own speed moved {drift:.2f}× between these "
                      f"runs ({c.text} by the medians)", drift)
    return Versus(metric, c.ratio, c.verdict, c.text, drift)


def paired_verdict(run: RunResult, against: RunResult, metric: str) -> Comparison | None:
    """`run` against `against` paired by request (probe/runs/stopping.py): the mean log ratio
    of the later run's warm values over the earlier one's medians, as its stopping rule read it.
    None where it cannot be paired (another request list, too few warm requests, a figure of
    whole passes): the spreads' verdict then stands."""
    attribute = PER_REQUEST.get(metric)
    if (attribute is None or run.request_list != against.request_list
            or not run.steady_records or not against.steady_records):
        return None
    observer_is_run = not (against.stopping and any(
        p.partner == run.key for p in against.stopping.against))
    if observer_is_run:
        found = paired(against.key, run.steady_records,
                       medians(against.steady_records, attribute), attribute)
        interval = found.interval
    else:                   # `against` ran later and was judged against `run`: turn it round
        found = paired(run.key, against.steady_records,
                       medians(run.steady_records, attribute), attribute)
        i = found.interval
        interval = None if i is None else Interval(i.n, -i.mean, -i.hi, -i.lo)
    if interval is None or not math.isfinite(interval.lo):
        return None
    return paired_comparison(interval, found.requests_to_tell)


def paired_comparison(interval: Interval, requests_to_tell: int | None) -> Comparison:
    """The verdict and its words for a paired interval on the mean log ratio (< 0: faster)."""
    verdict = decide(interval, MARGIN)
    ratio = math.exp(interval.mean)
    lo, hi = math.exp(interval.lo), math.exp(interval.hi)
    said = (f"paired over {interval.n} requests: ×{ratio:.2f}, always-valid 95% interval "
            f"×{lo:.2f}–×{hi:.2f}")
    factor = _factor_text(1 / ratio, "faster", "slower")
    if verdict in (FASTER, SLOWER):
        return Comparison(ratio, verdict, f"{factor} ({said})")
    if verdict == WITHIN:
        return Comparison(ratio, WITHIN, f"within noise (under ±{MARGIN:.0%}; {said})")
    # the distance to the margin is the same either way round: so is the count
    more = f"; needs ~{requests_to_tell} requests" if requests_to_tell else ""
    return Comparison(ratio, UNDECIDED, f"{UNDECIDED} ({factor} by the mean; {said}{more})")


def usable(outcome: Outcome) -> RunResult | str:
    """The run when its figures can be compared with another's, otherwise why not. A run that
    lost requests is not comparable: its latencies describe only the requests that survived."""
    if outcome is None:
        return "not run"
    if not isinstance(outcome, RunResult):
        return f"run failed: {outcome.error}"
    if outcome.failed:
        first = (outcome.errors or ("?",))[0]
        return f"not comparable: {outcome.failed} requests failed ({first})"
    return outcome


def failed_text(outcome: Outcome) -> str | None:
    """Why a run cannot be compared with another, or None (see `usable`)."""
    run = usable(outcome)
    return run if isinstance(run, str) else None

