"""The Optuna study behind `tune --search quick`: why Optuna (a maintained optimiser that takes
categorical and integer dimensions together, conditional ones through define-by-run, and
constraints through Trial.set_constraint), which sampler, and how tune's trials are told to
it — measured here, or recorded by an earlier run of the search (--resume)."""

from __future__ import annotations

import optuna

from probe.tune.space import Dimension, Value, chosen_of
from probe.tune.trials import DONE, FIGURES, Trial, objective_value
from probe.tune.tuned_settings import Setup


def new_study(objectives: tuple[str, ...], seed: int, parallel: bool = False) -> optuna.Study:
    """TPE for one objective, NSGA-II for several. With trials in flight at once (`parallel`)
    TPE's constant liar counts each asked-but-unfinished trial as a poor one, so the next
    ask goes elsewhere rather than beside it."""
    optuna.logging.set_verbosity(optuna.logging.WARNING)   # only infertop speaks
    directions = [optuna.study.StudyDirection.MAXIMIZE if FIGURES[o]
                  else optuna.study.StudyDirection.MINIMIZE for o in objectives]
    sampler: optuna.samplers.BaseSampler
    if len(objectives) == 1:
        sampler = optuna.samplers.TPESampler(seed=seed, constant_liar=parallel)
    else:
        sampler = optuna.samplers.NSGAIISampler(seed=seed)
    return optuna.create_study(directions=directions, sampler=sampler)


def distribution(dim: Dimension) -> optuna.distributions.BaseDistribution:
    """A numeric dimension is an integer range on a log scale (TPE models its order, so a
    good slot count makes its neighbours likelier); an option, its categories."""
    if dim.numeric:
        ends = [int(v) for v in dim.values]
        return optuna.distributions.IntDistribution(min(ends), max(ends), log=True)
    return optuna.distributions.CategoricalDistribution(list(dim.values))


def suggest(asked: optuna.trial.Trial, dim: Dimension) -> Value:
    chosen = distribution(dim)
    if isinstance(chosen, optuna.distributions.IntDistribution):
        return asked.suggest_int(dim.key, chosen.low, chosen.high, log=True)
    return asked.suggest_categorical(dim.key, [str(v) for v in dim.values])


def params(setup: Setup, dims: tuple[Dimension, ...]) -> dict[str, Value]:
    """A setup's parameters for the sampler, less a setting outside its dimension's range
    (tune's default where the user's own values leave it out: the sampler chooses there)."""
    out = chosen_of(setup, dims)
    for dim in dims:
        if dim.numeric and dim.key in out:
            if not min(map(int, dim.values)) <= int(out[dim.key]) <= max(map(int, dim.values)):
                del out[dim.key]
    return out


def violations(trial: Trial) -> dict[str, float]:
    """Optuna's convention (Trial.set_constraint, which replaced constraints_func in 5.0):
    a value ≤ 0 is a constraint met; the samplers prefer feasible trials."""
    return {name: 0.0 if c.met else 1.0 for name, c in trial.constraints.items()}


def values_of(trial: Trial, objectives: tuple[str, ...]) -> list[float] | None:
    values = [objective_value(trial, o) for o in objectives]
    return None if trial.status != DONE or any(v is None for v in values) else \
        [float(v) for v in values if v is not None]


def tell(study: optuna.Study, asked: optuna.trial.Trial, trial: Trial,
         objectives: tuple[str, ...]) -> None:
    values = values_of(trial, objectives)
    for name, value in violations(trial).items():
        asked.set_constraint(name, value)
    if values is None:
        study.tell(asked, state=optuna.trial.TrialState.FAIL)
    else:
        study.tell(asked, values)


def add(study: optuna.Study, trial: Trial, dims: tuple[Dimension, ...],
        objectives: tuple[str, ...]) -> None:
    """A trial of an earlier run of this search, told to the sampler as finished."""
    chosen = params(trial.setup, dims)
    distributions = {d.key: distribution(d) for d in dims if d.key in chosen}
    values = values_of(trial, objectives)
    study.add_trial(optuna.trial.create_trial(
        params=chosen, distributions=distributions, values=values,
        state=(optuna.trial.TrialState.COMPLETE if values is not None
               else optuna.trial.TrialState.FAIL),
        constraints=violations(trial) or None))
