"""The tune loop, pure: from the baseline, try one change at a time and keep it only when the
figure (goodput at the rate, or capacity at the SLO) improves beyond the run-to-run noise — the
bench's own verdict on two spreads (probe/runs/verdict.py). Each candidate is measured
alternated with the config it would replace, rerun beside it in the same step, and judged
against that rerun: a config measured minutes earlier, on a machine whose load has moved since,
is no control. Stops at the budget or when told."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Callable

from probe.common.units import fmt_fraction, fmt_ms, fmt_num
from probe.contract.figures import SegmentStats
from probe.contract.options import OptConfig
from probe.runs.spread import Spread, fmt_spread
from probe.runs.verdict import compare
from probe.tune.candidates import DRIFTING, Candidate, applied

# With one repeat a side the noise is unknown: a change is kept only when it is this much better.
UNKNOWN_NOISE = 0.05


@dataclass(frozen=True)
class Measured:
    """One config's runs: the figure tune compares (its spread over the repeats; for capacity,
    the bracket) and what the table shows beside it."""
    figure: Spread
    goodput_rps: float | None
    slo_attainment: float | None
    p95_ms: float | None
    drift: float | None                  # 1 − token agreement with the fp32 reference
    sessions: tuple[str, ...] = ()
    segment: SegmentStats | None = None  # the first run's, for ordering the candidates
    capacity: dict | None = None         # --find-capacity: the search, bracket and runs
    seconds: float = 0.0                 # the whole step's, the control's runs included
    control: Measured | None = None      # the current config, rerun alternated beside it

    def as_dict(self) -> dict:
        return {"figure": self.figure.as_dict(), "goodput_rps": self.goodput_rps,
                "slo_attainment": self.slo_attainment, "p95_ms": self.p95_ms,
                "drift": self.drift, "sessions": list(self.sessions),
                "capacity": self.capacity, "seconds": round(self.seconds, 1),
                "control": self.control.as_dict() if self.control else None}


@dataclass(frozen=True)
class Step:
    change: str                          # "baseline" or "key=value"
    options: OptConfig
    kept: bool
    why: str
    measured: Measured | None = None     # None: not run (it did not apply)
    hint: str = ""                       # why the session's data tried it early

    def as_dict(self) -> dict:
        m = self.measured
        return {"change": self.change, "options": self.options.as_dict(), "kept": self.kept,
                "goodput_rps": m.goodput_rps if m else None,
                "slo_attainment": m.slo_attainment if m else None, "why": self.why,
                "hint": self.hint, "measured": m.as_dict() if m else None}


@dataclass
class TuneState:
    final: OptConfig                     # the config kept so far (the baseline at first)
    steps: list[Step] = field(default_factory=list)
    stopped: str = ""                    # why the search ended early ("": it ran out of changes)


def figure_text(figure: Spread) -> str:
    return fmt_spread(figure, lambda v: f"{fmt_num(v, 3)} req/s")


def verdict(candidate: Measured, current: Measured, *, capacity: bool) -> tuple[bool, str]:
    """Kept or not, and why, in the bench's words: against the candidate's own control (the
    current config rerun beside it) when it has one, else against `current`."""
    control = candidate.control
    current = judged_against(candidate, current)
    noun = "capacity" if capacity else "goodput"
    result = compare(candidate.figure, current.figure, lower_is_better=False,
                     better=f"more {noun}", worse=f"less {noun}")
    shown = (f"{figure_text(candidate.figure)} vs "
             f"{figure_text(current.figure)}"
             + (" for the current, rerun alternated with it" if control else ""))
    if result.verdict == f"more {noun}":
        return True, f"{result.text}: {shown}"
    if result.verdict == "noise unknown" and result.ratio and result.ratio > 1 + UNKNOWN_NOISE:
        return True, f"{result.text}, above the {UNKNOWN_NOISE:.0%} margin: {shown}"
    if result.verdict == "n/a":
        mine, theirs = candidate.figure, current.figure
        if theirs.median is None and mine.median is not None and capacity:
            return True, f"the current met the target at no rate tried; this one did: {shown}"
        if theirs.median == 0 and mine.median:      # from none at all: apart, or unknown noise
            if (mine.n >= 2 and theirs.n >= 2 and mine.low is not None
                    and theirs.high is not None and mine.low > theirs.high):
                return True, f"from no {noun} at all, beyond the noise: {shown}"
            if mine.n < 2 or theirs.n < 2:
                return True, f"from no {noun} at all (one repeat: noise not measured): {shown}"
            return False, f"from none, within noise: {shown}"
        if theirs.median and mine.median == 0:
            return False, f"no {noun} at all, less than the current: {shown}"
        return False, f"no {noun} to compare ({shown})"
    return False, f"{result.text}: {shown}"


# evaluate(options, label, control): measure `options`; with a control (the config kept so
# far), rerun the control alternated with it and return it as the result's `control`
Evaluate = Callable[[OptConfig, str, OptConfig | None], Measured]
EvaluateMany = Callable[[list[tuple[OptConfig, str, OptConfig | None]]], list[Measured]]


def run_tune(baseline: OptConfig, evaluate: Evaluate,
             order: Callable[[SegmentStats | None], list[Candidate]], *, capacity: bool,
             max_drift: float, budget_s: float, stop: threading.Event | None = None,
             on_step: Callable[[Step, TuneState], None] = lambda step, state: None,
             clock: Callable[[], float] = time.monotonic, width: int = 1,
             evaluate_many: EvaluateMany | None = None) -> TuneState:
    """`evaluate(options, label, control)` measures a config (each candidate alternated with
    the config kept so far, its control); `on_step` hears each step as it is decided (tune
    writes its files there, so an interrupted tune keeps what it did).

    A step measures up to `width` candidates at once, each on top of the config kept so far
    (`evaluate_many`, e.g. one Ray task per node slot, each with its own control; `width` 1 is
    one change at a time). Each gets the same verdict against its control; of those that beat
    it, the one with the largest ratio to its control is kept, and the others are tried again
    on top of it."""
    stop = stop or threading.Event()
    many = evaluate_many or (lambda jobs: [evaluate(*job) for job in jobs])
    state = TuneState(final=baseline)

    def record(step: Step) -> None:
        state.steps.append(step)
        on_step(step, state)

    started = clock()
    current = evaluate(baseline, "baseline", None)
    if stop.is_set():   # cut short: it measured nothing a change could be judged against
        state.stopped = "interrupted"
        record(Step("baseline", baseline, False, "interrupted before its runs were done: not "
                                                 "counted (the runs that finished are in runs/)"))
        return state
    record(Step("baseline", baseline, True, "the starting point", current))
    queue = list(order(current.segment))
    over_budget = 0
    while queue:
        if stop.is_set():
            state.stopped = "interrupted"
            break
        batch: list[tuple[Candidate, OptConfig]] = []
        later: list[Candidate] = []
        spent = clock() - started
        for candidate in queue:
            if len(batch) >= max(width, 1):
                later.append(candidate)
                continue
            options, reason = applied(state.final, candidate)
            if options is None:
                if any(applied(chosen, candidate)[0] is not None for _, chosen in batch):
                    later.append(candidate)     # it applies once a change of this step is kept
                else:
                    record(Step(candidate.text, state.final, False, f"not tried: {reason}",
                                hint=candidate.hint))
                continue
            runs = [s.measured.seconds for s in state.steps if s.measured]
            expected = estimate_s(state.steps, options)
            # the first change that applies always runs: a budget smaller than two configs
            # still compares one change with the baseline
            if len(runs) >= 2 and spent + expected > budget_s:
                over_budget += 1
                record(Step(candidate.text, options, False,
                            f"not started for the budget: a step like it takes about "
                            f"{expected / 60:.1f} min, {max(budget_s - spent, 0) / 60:.1f} of "
                            f"{budget_s / 60:.1f} min left", hint=candidate.hint))
                continue
            batch.append((candidate, options))
        queue = later
        if not batch:
            break
        results = many([(options, candidate.text, state.final) for candidate, options in batch])
        if stop.is_set():                # the run was cut short: it proves nothing
            state.stopped = "interrupted"
            break
        judged = [(candidate, options, measured,
                   *_judged(measured, current, candidate, capacity, max_drift))
                  for (candidate, options), measured in zip(batch, results)]
        winners = [j for j in judged if j[3]]
        best = max(winners, key=lambda j: gain(j[2], current)) if winners else None
        again: list[Candidate] = []
        for candidate, options, measured, kept, why in judged:
            if kept and best is not None and candidate is not best[0]:
                kept, why = False, (f"{why}; but {best[0].text} beat its control by more in "
                                    f"the same step: tried again on top of it")
                again.append(candidate)
            record(Step(candidate.text, options, kept, why, measured, candidate.hint))
            if kept:
                state.final, current = options, measured
        queue = again + queue
    if over_budget and not state.stopped:
        state.stopped = (f"budget: {over_budget} change(s) not started, each expected to pass "
                         f"the {budget_s / 60:.1f} min budget")
    return state


def judged_against(candidate: Measured, current: Measured) -> Measured:
    """What a candidate is compared with: its own control (the current config rerun beside
    it), else the current config's own figures."""
    return candidate.control or current


def gain(measured: Measured, current: Measured) -> float:
    """How many times its control's figure a candidate reached (each candidate of a wide step
    has its own control, measured beside it on its own slot)."""
    mine, theirs = measured.figure.median, judged_against(measured, current).figure.median
    if not mine:
        return 0.0
    return mine / theirs if theirs else float("inf")


def estimate_s(steps: list[Step], options: OptConfig) -> float:
    """What a step with these options should take, from the steps already run: the mean of
    those of its kind (compiled or eager, which differ most), else the longest one run."""
    runs = [s for s in steps if s.measured]
    alike = [s.measured.seconds for s in runs if s.measured and
             s.options.compiled == options.compiled]
    if alike:
        return sum(alike) / len(alike)
    return max((s.measured.seconds for s in runs if s.measured), default=0.0)


def _judged(measured: Measured, current: Measured, candidate: Candidate, capacity: bool,
            max_drift: float) -> tuple[bool, str]:
    kept, why = verdict(measured, current, capacity=capacity)
    if kept and candidate.key in DRIFTING:
        if measured.drift is None:
            return False, f"{why}; but its drift was not measured (no sampled request)"
        if measured.drift > max_drift:
            return False, (f"{why}; but its drift {fmt_fraction(measured.drift)} is above "
                           f"--max-drift {fmt_fraction(max_drift)}")
    return kept, why


def step_row(step: Step) -> list[str]:
    m = step.measured
    if m is None:
        return [step.change, "—", "—", "—", "—", "—", "skipped", step.why]
    control = figure_text(m.control.figure) if m.control else "—"
    return [step.change, figure_text(m.figure), control,
            fmt_fraction(m.slo_attainment),
            fmt_ms(m.p95_ms), fmt_fraction(m.drift), "kept" if step.kept else "dropped",
            step.why + (f" (tried early: {step.hint})" if step.hint else "")]
