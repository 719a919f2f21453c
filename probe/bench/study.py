"""The study's runs: every distinct config once (runs two experiments share are read by
both), in first-use order, then the open-loop experiments; and the sections built from them."""

from __future__ import annotations

import logging
import math
import time
import traceback
from dataclasses import dataclass, field
from typing import Callable, Hashable

from probe.analysis.sequential import BURN_IN
from probe.bench.compile_history import CompileHistory
from probe.bench.experiments import EXPERIMENTS
from probe.bench.experiments.base import Experiment, OpenLoopExperiment
from probe.bench.progress import Progress, cold_compile_s, estimate_s, extras_s
from probe.runs.openloop import OpenLoopStudy
from probe.runs.plan import Plan, RunSpec
from probe.runs.results import FailedRun, RunOutcome, RunResult
from probe.runs.runs import (
    Extra,
    RunContext,
    RunHooks,
    execute_group,
    pair_rounds,
    warms_short,
    warmup_share,
)
from probe.runs.stopping import SEQUENTIAL, StopRule, medians

log = logging.getLogger(__name__)


@dataclass
class PlannedRun:
    spec: RunSpec
    extras: frozenset[Extra] = frozenset()
    users: list[tuple[str, str]] = field(default_factory=list)     # (experiment, role)
    partners: set[str] = field(default_factory=set)    # the runs a verdict judges it against
    whole: bool = False             # a verdict on its repeats' range reads it: serve the cap


def collect_runs(plan: Plan, experiments: tuple[str, ...]
                 ) -> tuple[dict[str, PlannedRun], list[tuple[str, ...]]]:
    """Distinct runs by key, and the units to execute: one key, or the keys of an interleaved
    group (eager configs whose passes alternate on one engine)."""
    runs: dict[str, PlannedRun] = {}
    units: list[tuple[str, ...]] = []
    for name in experiments:
        experiment = EXPERIMENTS[name]
        if not isinstance(experiment, Experiment):
            continue
        specs = experiment.runs(plan)
        grouped: dict[str, tuple[str, ...]] = {}
        for roles in experiment.groups(plan):
            keys = tuple(specs[r].key for r in roles)
            if (len(set(keys)) == len(keys) and not any(k in runs for k in keys)
                    and not any(specs[r].options.compiled for r in roles)):
                grouped.update({role: keys for role in roles})
        for role, spec in specs.items():
            if spec.key not in runs:
                runs[spec.key] = PlannedRun(spec)
                unit = grouped.get(role, (spec.key,))
                if unit not in units:
                    units.append(unit)
            planned = runs[spec.key]
            planned.extras |= experiment.extras(plan).get(role, frozenset())
            planned.users.append((name, role))
        for role in experiment.whole(plan):
            if role in specs:
                runs[specs[role].key].whole = True
        for role, control in experiment.pairs(plan):
            if role in specs and control in specs and specs[role].key != specs[control].key:
                runs[specs[role].key].partners.add(specs[control].key)
                runs[specs[control].key].partners.add(specs[role].key)
    return runs, whole_first(runs, units)


def whole_first(runs: dict[str, PlannedRun], units: list[tuple[str, ...]]
                ) -> list[tuple[str, ...]]:
    """A run that serves its cap anyway (a verdict on its repeats' range reads it) moves before
    the first of its partners, so they can stop against it rather than serve their caps with
    nothing to pair: E1's default, whole for E4's p95 verdict, runs before E1's eager control."""
    ordered = list(units)
    for unit in units:
        if len(unit) != 1 or not runs[unit[0]].whole:
            continue
        partners = runs[unit[0]].partners
        first = next((i for i, other in enumerate(ordered)
                      if any(key in partners for key in other)), None)
        if first is not None and first < ordered.index(unit):
            ordered.remove(unit)
            ordered.insert(first, unit)
    return ordered


@dataclass
class Study:
    plan: Plan
    experiments: tuple[str, ...]
    context: RunContext
    runs: dict[str, PlannedRun]
    units: list[tuple[str, ...]]
    after_engine: Callable[[object], None] = lambda engine: None
    results: dict[str, RunOutcome] = field(default_factory=dict)
    open_loop: dict[str, tuple[dict, dict]] = field(default_factory=dict)
    paired_stops: bool = True       # runs one after another: a later run stops against earlier
    history: CompileHistory | None = None   # what the compile cache holds, for the projection
    seconds: dict[str, float] = field(default_factory=dict)   # each unit's and open-loop
    # experiment's wall, by unit_name() or experiment name: report.json `time`

    @classmethod
    def of(cls, plan: Plan, experiments: tuple[str, ...], context: RunContext, *,
           profile: Extra | None = None,
           after_engine: Callable[[object], None] = lambda engine: None) -> Study:
        runs, units = collect_runs(plan, experiments)
        if profile is not None:
            # the compiled fullgraph run with the cache, else the first one that runs alone
            chosen = next((k for k, r in runs.items() if r.spec.options.compiled
                           and r.spec.options.decode == "fullgraph"
                           and r.spec.options.kv_cache == "on"),
                          next((k for unit in units if len(unit) == 1 for k in unit), None))
            if chosen is not None:
                runs[chosen].extras |= {profile}
        return cls(plan, experiments, context, runs, units, after_engine)

    def passes(self, key: str) -> float:
        """The passes a run is expected to serve: its warm-up (a short one: the share of a
        pass it decodes), the warm passes its stopping rule is expected to need (once
        finished: those it served), and its extras'."""
        spec = self.runs[key].spec
        return (warmup_share(spec, warms_short(self.context, spec)) + self.steady_passes(key)
                + sum(extra.passes(self.context) for extra in self.runs[key].extras))

    def steady_passes(self, key: str) -> float:
        """Finished: the warm passes it served. Else the cap, for a run that will have no
        finished partner to stop against (or under --stopping fixed); for one that will, the
        share of their caps the finished runs with partners served (before any has: one
        pass, or the BURN_IN requests the interval needs). An interleaved pair stops only
        after a whole round, and not before BURN_IN requests each."""
        planned, repeats = self.runs[key], self.context.repeats
        count = max(1, len(planned.spec.requests))
        outcome = self.results.get(key)
        if isinstance(outcome, RunResult) and outcome.stopping is not None:
            return outcome.stopping.served / count
        unit = self.unit_index(key)
        earliest = 0.0
        if len(self.units[unit]) > 1:
            if pair_rounds([self.runs[k].spec for k in self.units[unit]], self.context) is None:
                return float(repeats)
            earliest = float(math.ceil(max(count, BURN_IN) / count))
        elif self.context.stopping != SEQUENTIAL or not self.paired_stops or planned.whole:
            return float(repeats)
        elif not planned.partners:
            return 1.0                  # no verdict reads it: one pass
        elif not any(self.unit_index(p) < unit for p in planned.partners):
            return float(repeats)
        shares = [o.stopping.served / o.stopping.cap for o in self.results.values()
                  if isinstance(o, RunResult) and o.stopping is not None
                  and o.stopping.against and o.stopping.cap]
        projected = (repeats * sum(shares) / len(shares) if shares
                     else max(1.0, BURN_IN / count))
        return min(float(repeats), max(earliest, projected))

    def unit_index(self, key: str) -> int:
        return next(i for i, unit in enumerate(self.units) if key in unit)

    def compile_estimate_s(self, key: str) -> float:
        """What a run's compiles are expected to cost: warm where the compile cache holds its
        graphs (probe/bench/compile_history.py), else cold."""
        spec = self.runs[key].spec
        warm = self.history.warm_s(spec) if self.history is not None else None
        return cold_compile_s(spec, model=self.plan.model) if warm is None else warm

    def estimate_s(self, unit: tuple[str, ...]) -> float:
        return sum(estimate_s(self.runs[k].spec, model=self.plan.model, passes=self.passes(k),
                              start=i == 0,      # one engine serves the unit's runs
                              compile_s=self.compile_estimate_s(k))
                   + extras_s(self.runs[k].extras, model=self.plan.model)
                   for i, k in enumerate(unit))

    def compile_estimates(self) -> dict[Hashable, float]:
        """Each unit's estimate's compile part (the open-loop experiments compile nothing)."""
        return {i: sum(self.compile_estimate_s(k) for k in unit)
                for i, unit in enumerate(self.units)}

    def open_loop_names(self) -> list[str]:
        """The open-loop experiments, run after the units in this order."""
        return [n for n in self.experiments if isinstance(EXPERIMENTS[n], OpenLoopExperiment)]

    def progress(self) -> Progress:
        kinds = ["compiled" if any(self.runs[k].spec.options.compiled for k in unit)
                 else "eager" for unit in self.units]
        kinds += ["open loop"] * len(self.open_loop_names())
        return Progress(self.estimates(), kinds=kinds, compiling=self.compile_estimates())

    def estimates(self) -> dict[Hashable, float]:
        """Every unit's estimate as the stopping rules now project it, then each open-loop
        experiment's (keyed after the units, in the order they run)."""
        estimates: dict[Hashable, float] = {
            i: self.estimate_s(unit) for i, unit in enumerate(self.units)}
        for offset, name in enumerate(self.open_loop_names()):
            experiment = EXPERIMENTS[name]
            assert isinstance(experiment, OpenLoopExperiment)
            estimates[len(self.units) + offset] = experiment.estimate_s(self.plan)
        return estimates

    def describe(self, unit: tuple[str, ...]) -> tuple[str, str]:
        """The experiments that read a unit, and its configs' label."""
        specs = [self.runs[key].spec for key in unit]
        users = {e for key in unit for e, _ in self.runs[key].users}
        label = " | ".join(s.options.label() for s in specs)
        if specs[0].requests_name != "replayed":
            label += f" [{specs[0].requests_name}]"
        return ", ".join(sorted(users, key=list(EXPERIMENTS).index)), label

    def run(self, progress: Progress, environment: dict,
            check: Callable[[], None] = lambda: None) -> None:
        """Each unit on a fresh engine, then the open-loop experiments. A run that fails is
        recorded and the study goes on; Ctrl-C stops it with what finished kept. `check`,
        between runs: raises a stop whose raise was lost (interrupts.StopSignals.check)."""
        for index, unit in enumerate(self.units):
            check()
            self._run_unit(index, unit, progress)
        study = OpenLoopStudy(self.context, self.plan, environment, progress.message)
        for offset, name in enumerate(self.open_loop_names()):
            check()
            progress.start_run(len(self.units) + offset, name, "open loop")
            started = time.perf_counter()
            try:
                self.open_loop[name] = measure_open_loop(name, study)
            except KeyboardInterrupt as exc:   # its finished runs stay in the report
                self.open_loop[name] = interrupted_open_loop(
                    name, exc, study.finished.get(name, {}))
                raise
            finally:
                self.seconds[name] = time.perf_counter() - started
            progress.finish_run()

    def _run_unit(self, index: int, unit: tuple[str, ...], progress: Progress) -> None:
        progress.start_run(index, *self.describe(unit))
        total = sum(len(self.runs[k].spec.requests) * self.passes(k) for k in unit)
        served = [0]

        def on_request(phase: str, done: int, n: int) -> None:
            served[0] += 1
            progress.request_done(phase, done, n, min(0.99, served[0] / total))

        started = time.perf_counter()
        try:
            outcomes = run_unit([self.runs[key].spec for key in unit], self.context,
                                RunHooks(on_request, self.after_engine),
                                {key: self.runs[key].extras for key in unit},
                                self.stop_rule(unit))
        finally:
            self.seconds[unit_name(unit)] = time.perf_counter() - started
        self.results.update(outcomes)
        if self.history is not None:
            self.history.record({key: (self.runs[key].spec, outcome)
                                 for key, outcome in outcomes.items()
                                 if isinstance(outcome, RunResult)})
        failed = next((o for o in outcomes.values() if isinstance(o, FailedRun)), None)
        if failed is not None:
            progress.message(f"run {unit_name(unit)} failed: {failed.error}")
        progress.finish_run(compiling_s=sum(o.compile_s for o in outcomes.values()
                                            if isinstance(o, RunResult)))
        # what it served, and what the rest will
        progress.reestimate(self.estimates(), self.compile_estimates())

    def stop_rule(self, unit: tuple[str, ...]) -> StopRule | None:
        """A run of its own, under --stopping sequential, against its partners that finished
        (each request's median warm latency there); None: it serves its cap."""
        if len(unit) != 1 or self.context.stopping != SEQUENTIAL or not self.paired_stops:
            return None
        planned = self.runs[unit[0]]
        if planned.whole:
            return StopRule({}, min_requests=0, whole=True)
        count = len(planned.spec.requests)
        if not planned.partners:
            return StopRule({}, min_requests=count, alone=True)
        partners = {key: medians(outcome.steady_records) for key in sorted(planned.partners)
                    if isinstance(outcome := self.results.get(key), RunResult)
                    and not outcome.failed and outcome.steady_records}
        return StopRule(partners, min_requests=count, cap=count * self.context.repeats)

    def sections(self, environment: dict) -> dict[str, dict]:
        sections = {}
        for name in self.experiments:
            experiment = EXPERIMENTS[name]
            if isinstance(experiment, OpenLoopExperiment):
                if name in self.open_loop:
                    sections[name] = self.open_loop[name][1]
                continue
            results = {role: self.results.get(spec.key)
                       for role, spec in experiment.runs(self.plan).items()}
            try:
                sections[name] = experiment.build(self.plan, results, environment)
            except Exception as exc:  # a section that cannot be built says so
                sections[name] = experiment.template.failed_section(
                    exc, traceback.format_exc()[-2000:])
        return sections

    def runs_json(self) -> dict:
        """report.json `runs`: every run by key, and each open-loop experiment's results."""
        out = {key: outcome.as_dict() for key, outcome in self.results.items()}
        out.update({name: results for name, (results, _) in self.open_loop.items()})
        return out


def unit_name(unit: tuple[str, ...]) -> str:
    """A unit's name in report.json `time`: its run's key, or its group's keys joined."""
    return " + ".join(unit)


def run_unit(specs: list[RunSpec], context: RunContext, hooks: RunHooks,
             extras: dict[str, frozenset[Extra]],
             rule: StopRule | None = None) -> dict[str, RunOutcome]:
    """One unit on a fresh engine; a unit that raises is recorded as failed runs."""
    try:
        return dict(execute_group(specs, context, hooks, extras=extras, rule=rule))
    except Exception as exc:  # one run's failure is reported; the study goes on
        log.debug("run %s failed", [s.key for s in specs], exc_info=True)
        return failed_runs(specs, exc, traceback.format_exc()[-2000:])


def failed_runs(specs: list[RunSpec], exc: BaseException,
                trace: str = "") -> dict[str, RunOutcome]:
    return {spec.key: FailedRun(spec.key, spec.options.label(),
                                f"{type(exc).__name__}: {exc}"[:500], trace)
            for spec in specs}


def measure_open_loop(name: str, study: OpenLoopStudy) -> tuple[dict, dict]:
    """An open-loop experiment's results and section; one that raises gives a failed section."""
    experiment = EXPERIMENTS[name]
    assert isinstance(experiment, OpenLoopExperiment)
    try:
        return experiment.measure(study)
    except Exception as exc:  # a section that cannot be built says so
        log.debug("%s failed", name, exc_info=True)
        return failed_open_loop(name, exc)


def interrupted_open_loop(name: str, exc: BaseException,
                          finished: dict[str, dict]) -> tuple[dict, dict]:
    """An open-loop experiment a signal stopped: the runs that finished, as its results."""
    section = EXPERIMENTS[name].template.failed_section(exc)
    section["error"] = (f"interrupted ({exc or 'SIGINT'}) after {len(finished)} finished "
                        f"run(s); they are in report.json runs.{name}.runs")
    return {"interrupted": True, "runs": dict(finished)}, section


def failed_open_loop(name: str, exc: BaseException) -> tuple[dict, dict]:
    section = EXPERIMENTS[name].template.failed_section(exc)
    return {"error": section["error"]}, section
