"""`tune --search quick|exhaustive`: a search over combinations of options, for the ones that
pay only together (compile pays once bucketing stops the recompiles). Pure apart from the
`evaluate` it is given: the default is measured first, then each trial alternated with the
best config so far on the same requests (evaluate.py), its figures carried to the default
through that control's own ratio. quick asks Optuna (TPE for one objective, NSGA-II for
several; the constraints through Trial.set_constraint) for a bounded number of trials, the
greedy path's configs first; exhaustive measures every config of the space. A config that
cannot run is recorded with why and never tried again; one cut short by a stop is recorded
as interrupted and rerun by `--resume`."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field, replace
from typing import Callable, Iterable

import optuna

from probe.contract.figures import SegmentStats
from probe.contract.options import OptConfig
from probe.tune.candidates import Candidate, applied
from probe.tune.search import Measured
from probe.tune.space import Dimension, Value, chosen_of, config_of, every_config
from probe.tune.trials import (
    DONE,
    ENERGY,
    FAILED,
    FIGURES,
    INTERRUPTED,
    Bounds,
    Trial,
    best,
    judged,
    measured_trial,
    objective_value,
)
from probe.tune.tuned_settings import Setup

QUICK, EXHAUSTIVE = "quick", "exhaustive"
# quick: asks of a config already tried, past which the sampler is taken to have run out
REPEATS_BEFORE_EXHAUSTED = 50
# evaluate(setup, label, control): measure `setup`, alternated with its control when it has one
EvaluateSetup = Callable[[Setup, str, Setup | None], Measured]
# seeds(default, segment): quick's first trials, from the default's trial and its run's figures
Seeds = Callable[[Trial, SegmentStats | None], list[tuple[Setup, str]]]


@dataclass
class ComboState:
    default: Setup
    trials: list[Trial] = field(default_factory=list)
    stopped: str = ""
    # why the search cannot go on here at all (--resume would meet it again): energy asked
    # for where the default's run could not measure it
    refused: str = ""


def greedy_path(baseline: OptConfig, candidates: Iterable[Candidate],
                dims: tuple[Dimension, ...]) -> list[tuple[Setup, str]]:
    """The configs the greedy search would reach were every change kept, in its order (the
    baseline's data moves the changes it points at first): the quick search's first trials."""
    keys = {d.key for d in dims}
    path: list[tuple[Setup, str]] = []
    current = baseline
    for candidate in candidates:
        if candidate.key not in keys:
            continue
        options, _ = applied(current, candidate)
        if options is None:
            continue
        setup = config_of(options, chosen_of(Setup(options), dims), dims)
        current = setup.options
        source = f"greedy path (data hint: {candidate.hint})" if candidate.hint else "greedy path"
        path.append((setup, source))
    return path


def baseline_setup(baseline: OptConfig, dims: tuple[Dimension, ...]) -> Setup:
    """What the default trial serves: the baseline, its settings at tune's defaults."""
    return config_of(baseline, {}, dims)


def run_combo(baseline: OptConfig, evaluate: EvaluateSetup, *, mode: str,
              dims: tuple[Dimension, ...], trials: int, objectives: tuple[str, ...],
              bounds: Bounds, seeds: Seeds,
              previous: Iterable[Trial] = (), budget_s: float = float("inf"),
              stop: threading.Event | None = None,
              on_trial: Callable[[ComboState], None] = lambda state: None,
              clock: Callable[[], float] = time.monotonic, seed: int = 0) -> ComboState:
    """Search; `previous` are a stopped search's trials (--resume): a finished one is never
    measured again, an interrupted one is rerun first. `trials` bounds quick's trials besides
    the default, resumed ones counted; `on_trial` hears the state before and after each."""
    stop = stop or threading.Event()
    state = ComboState(baseline_setup(baseline, dims))
    rerun: list[tuple[Setup, str]] = []
    for trial in previous:
        if trial.status == INTERRUPTED:
            rerun.append((trial.setup, f"rerun: {trial.source}" if trial.source else "rerun"))
        else:
            state.trials.append(trial)
    started = clock()
    tried = {t.setup for t in state.trials}
    segments: dict[int, SegmentStats | None] = {}   # the live figures of a trial run here

    def measure(setup: Setup, source: str) -> Trial | None:
        """Measure one config against the best so far; None: stopped before it finished."""
        default = _default_trial(state)
        control = None if default is None else (best(state.trials, objectives[0]) or default)
        number = 1 + max((t.number for t in state.trials), default=-1)
        pending = Trial(number, setup.options, INTERRUPTED, source,
                        "in progress when the search stopped: rerun by --resume",
                        settings=setup.settings)
        state.trials.append(pending)
        on_trial(state)
        label = "default" if control is None else f"trial {number}"
        try:
            measured = evaluate(setup, label, control.setup if control else None)
        except Exception as exc:  # noqa: BLE001 - a config the engine refuses ends only itself
            trial = replace(pending, status=FAILED, reason=f"{type(exc).__name__}: {exc}",
                            control=control.options if control else None,
                            control_settings=control.settings if control else None)
        else:
            if stop.is_set():
                on_trial(state)
                return None
            segments[number] = measured.segment
            trial = measured_trial(number, setup, measured, source=source, control=control)
            trial = judged(trial, bounds, default or trial)
        state.trials[-1] = trial
        tried.add(setup)
        on_trial(state)
        return trial

    default = _default_trial(state)
    if default is None:
        rerun = [(o, s) for o, s in rerun if o != state.default]
        first = measure(state.default, "default")
        if first is None:
            state.stopped = "interrupted"
            return state
        if first.status != DONE:
            state.stopped = f"the default config could not run: {first.reason}"
            return state
        default = first
    if default.energy_unavailable is not None and (ENERGY in objectives or
                                                   bounds.max_joules_per_token is not None):
        # known only once the default has run: no counter, or none the engine could read
        flag = ("--objective energy" if ENERGY in objectives else "--max-joules-per-token")
        state.refused = state.stopped = (f"{flag}: energy cannot be measured here "
                                         f"({default.energy_unavailable})")
        return state

    def out_of_time() -> bool:
        if stop.is_set():
            state.stopped = "interrupted"
            return True
        if clock() - started > budget_s:
            state.stopped = f"budget: {budget_s / 60:.1f} min spent"
            return True
        return False

    if mode == EXHAUSTIVE:
        queue = rerun + [(c, "grid") for c in every_config(baseline, dims)]
        for options, source in queue:
            if options in tried:
                continue
            if out_of_time() or measure(options, source) is None:
                state.stopped = state.stopped or "interrupted"
                break
        return state

    def counted() -> int:
        return sum(1 for t in state.trials if t.status in (DONE, FAILED)
                   and t.source != "default")

    study = _study(objectives, seed)
    for trial in state.trials:
        _add(study, trial, dims, objectives)
    queued: dict[Setup, str] = {}
    for options, source in rerun + seeds(default, segments.get(default.number)):
        if options not in tried and options not in queued:
            queued[options] = source
            study.enqueue_trial(_params(options, dims))
    repeats = 0
    while counted() < trials:
        if out_of_time():
            break
        asked = study.ask()
        chosen: dict[str, Value] = {}
        for dim in dims:
            if dim.active({**baseline.as_dict(), **chosen}):
                chosen[dim.key] = _suggest(asked, dim)
        options = config_of(baseline, chosen, dims)
        if options in tried:
            known = next(t for t in state.trials if t.setup == options)
            _tell(study, asked, known, objectives)
            repeats += 1
            if repeats > REPEATS_BEFORE_EXHAUSTED:
                state.stopped = "the sampler asked only for configs already tried"
                break
            continue
        repeats = 0
        result = measure(options, queued.pop(options, "sampler"))
        if result is None:
            study.tell(asked, state=optuna.trial.TrialState.FAIL)
            state.stopped = "interrupted"
            break
        _tell(study, asked, result, objectives)
    return state


def _default_trial(state: ComboState) -> Trial | None:
    return next((t for t in state.trials if t.setup == state.default and t.control is None
                 and t.status == DONE), None)


def _distribution(dim: Dimension) -> optuna.distributions.BaseDistribution:
    """A numeric dimension is an integer range on a log scale (TPE models its order, so a
    good slot count makes its neighbours likelier); an option, its categories."""
    if dim.numeric:
        ends = [int(v) for v in dim.values]
        return optuna.distributions.IntDistribution(min(ends), max(ends), log=True)
    return optuna.distributions.CategoricalDistribution(list(dim.values))


def _params(setup: Setup, dims: tuple[Dimension, ...]) -> dict[str, Value]:
    """A setup's parameters for the sampler, less a setting outside its dimension's range
    (tune's default where the user's own values leave it out: the sampler chooses there)."""
    params = chosen_of(setup, dims)
    for dim in dims:
        if dim.numeric and dim.key in params:
            if not min(map(int, dim.values)) <= int(params[dim.key]) <= max(map(int, dim.values)):
                del params[dim.key]
    return params


def _suggest(asked: optuna.trial.Trial, dim: Dimension) -> Value:
    distribution = _distribution(dim)
    if isinstance(distribution, optuna.distributions.IntDistribution):
        return asked.suggest_int(dim.key, distribution.low, distribution.high, log=True)
    return asked.suggest_categorical(dim.key, [str(v) for v in dim.values])


def _study(objectives: tuple[str, ...], seed: int) -> optuna.Study:
    optuna.logging.set_verbosity(optuna.logging.WARNING)   # only infertop speaks
    directions = [optuna.study.StudyDirection.MAXIMIZE if FIGURES[o]
                  else optuna.study.StudyDirection.MINIMIZE for o in objectives]
    sampler: optuna.samplers.BaseSampler
    if len(objectives) == 1:
        sampler = optuna.samplers.TPESampler(seed=seed)
    else:
        sampler = optuna.samplers.NSGAIISampler(seed=seed)
    return optuna.create_study(directions=directions, sampler=sampler)


def _violations(trial: Trial) -> dict[str, float]:
    """Optuna's convention (Trial.set_constraint, which replaced constraints_func in 5.0):
    a value ≤ 0 is a constraint met; the samplers prefer feasible trials."""
    return {name: 0.0 if c.met else 1.0 for name, c in trial.constraints.items()}


def _values(trial: Trial, objectives: tuple[str, ...]) -> list[float] | None:
    values = [objective_value(trial, o) for o in objectives]
    return None if trial.status != DONE or any(v is None for v in values) else \
        [float(v) for v in values if v is not None]


def _tell(study: optuna.Study, asked: optuna.trial.Trial, trial: Trial,
          objectives: tuple[str, ...]) -> None:
    values = _values(trial, objectives)
    for name, value in _violations(trial).items():
        asked.set_constraint(name, value)
    if values is None:
        study.tell(asked, state=optuna.trial.TrialState.FAIL)
    else:
        study.tell(asked, values)


def _add(study: optuna.Study, trial: Trial, dims: tuple[Dimension, ...],
         objectives: tuple[str, ...]) -> None:
    """A trial of an earlier run of this search, told to the sampler as finished."""
    params = _params(trial.setup, dims)
    distributions = {d.key: _distribution(d) for d in dims if d.key in params}
    values = _values(trial, objectives)
    violations = _violations(trial)
    study.add_trial(optuna.trial.create_trial(
        params=params, distributions=distributions, values=values,
        state=(optuna.trial.TrialState.COMPLETE if values is not None
               else optuna.trial.TrialState.FAIL),
        constraints=violations or None))
