"""`tune --search quick|exhaustive`: a search over combinations of options, for the ones that
pay only together (compile pays once bucketing stops the recompiles). Pure apart from the
`evaluate` (or the pool of workers, trial_pool.py) it is given: the default is measured
first, then each trial alternated with the best config so far on the same requests
(evaluate.py), its figures carried to the default through that control's own ratio. quick
asks Optuna (optuna_study.py) for a bounded number of trials, the doctor's next step and the
greedy path's configs first; exhaustive measures every config of the space. With a pool
wider than one (`--ray`), several trials are in flight at once, each against the best known
when it started, and each result is merged as it arrives. A config that cannot run is
recorded with why and never tried again; one cut short by a stop is recorded as interrupted
and rerun by `--resume`."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field, replace
from typing import Callable, Iterable

import optuna

from probe.contract.figures import SegmentStats
from probe.contract.options import OptConfig
from probe.tune.candidates import Candidate, applied
from probe.tune.optuna_study import add, new_study, params, suggest, tell
from probe.tune.space import Dimension, Value, chosen_of, config_of, every_config
from probe.tune.trial_pool import EvaluateSetup, Outcome, SerialPool, TrialPool
from probe.tune.trials import (
    DONE,
    ENERGY,
    FAILED,
    INTERRUPTED,
    Bounds,
    Trial,
    best,
    judged,
    measured_trial,
)
from probe.tune.tuned_settings import Setup

QUICK, EXHAUSTIVE = "quick", "exhaustive"
# quick: asks of a config already tried, past which the sampler is taken to have run out
REPEATS_BEFORE_EXHAUSTED = 50
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


def run_combo(baseline: OptConfig, evaluate: EvaluateSetup | None, *, mode: str,
              dims: tuple[Dimension, ...], trials: int, objectives: tuple[str, ...],
              bounds: Bounds, seeds: Seeds,
              previous: Iterable[Trial] = (), budget_s: float = float("inf"),
              stop: threading.Event | None = None,
              on_trial: Callable[[ComboState], None] = lambda state: None,
              clock: Callable[[], float] = time.monotonic, seed: int = 0,
              pool: TrialPool | None = None) -> ComboState:
    """Search; `previous` are a stopped search's trials (--resume): a finished one is never
    measured again, an interrupted one is rerun first. `trials` bounds quick's trials besides
    the default, resumed ones counted; `on_trial` hears the state before and after each.
    `pool` measures the trials (default: `evaluate`, one at a time, here)."""
    stop = stop or threading.Event()
    workers: TrialPool = pool or SerialPool(_required(evaluate))
    state = ComboState(baseline_setup(baseline, dims))
    rerun: list[tuple[Setup, str]] = []
    for trial in previous:
        if trial.status == INTERRUPTED:
            rerun.append((trial.setup, f"rerun: {trial.source}" if trial.source else "rerun"))
        else:
            state.trials.append(trial)
    started = clock()
    tried = {t.setup for t in state.trials}      # finished, failed or in flight
    segments: dict[int, SegmentStats | None] = {}   # the live figures of a trial run here
    controls: dict[int, Trial | None] = {}           # each trial in flight: its control

    def begin(setup: Setup, source: str) -> int:
        """Start measuring a config against the best so far; its number."""
        default = _default_trial(state)
        control = None if default is None else (best(state.trials, objectives[0]) or default)
        number = 1 + max((t.number for t in state.trials), default=-1)
        state.trials.append(Trial(number, setup.options, INTERRUPTED, source,
                                  "in progress when the search stopped: rerun by --resume",
                                  settings=setup.settings))
        tried.add(setup)
        controls[number] = control
        on_trial(state)
        label = "default" if control is None else f"trial {number}"
        workers.start(number, setup, label, control.setup if control else None)
        return number

    def end(number: int, outcome: Outcome) -> Trial | None:
        """A trial's result merged; None: a stop cut it (left interrupted)."""
        at = next(i for i, t in enumerate(state.trials) if t.number == number)
        pending, control = state.trials[at], controls.pop(number)
        if isinstance(outcome, Exception):
            trial = replace(pending, status=FAILED,
                            reason=f"{type(outcome).__name__}: {outcome}",
                            control=control.options if control else None,
                            control_settings=control.settings if control else None)
        else:
            if stop.is_set():
                on_trial(state)
                return None
            segments[number] = outcome.segment
            trial = measured_trial(number, pending.setup, outcome, source=pending.source,
                                   control=control)
            trial = judged(trial, bounds, _default_trial(state) or trial)
        state.trials[at] = trial
        on_trial(state)
        return trial

    def finished() -> list[Trial] | None:
        """The trials that ended next; None: a stop came (the rest stay interrupted)."""
        done = workers.finished()
        merged = [end(number, outcome) for number, outcome in done]
        if not done or any(t is None for t in merged) or stop.is_set():
            state.stopped = "interrupted"
            return None
        return [t for t in merged if t is not None]

    default = _default_trial(state)
    if default is None:
        rerun = [(o, s) for o, s in rerun if o != state.default]
        begin(state.default, "default")
        first = finished()
        if first is None:
            return state
        if first[0].status != DONE:
            state.stopped = f"the default config could not run: {first[0].reason}"
            return state
        default = first[0]
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
        queue = [(c, s) for c, s in rerun + [(c, "grid") for c in every_config(baseline, dims)]
                 if c not in tried]
        while queue or controls:
            while queue and len(controls) < workers.width and not out_of_time():
                setup, source = queue.pop(0)
                if setup not in tried:
                    begin(setup, source)
            if not controls or finished() is None:
                break
        return state
    _quick(state, baseline, dims, objectives, trials, seed, workers, tried, controls, begin,
           finished, out_of_time, rerun + seeds(default, segments.get(default.number)))
    return state


def _quick(state: ComboState, baseline: OptConfig, dims: tuple[Dimension, ...],
           objectives: tuple[str, ...], trials: int, seed: int, workers: TrialPool,
           tried: set[Setup], controls: dict[int, Trial | None],
           begin: Callable[[Setup, str], int], finished: Callable[[], list[Trial] | None],
           out_of_time: Callable[[], bool], first: list[tuple[Setup, str]]) -> None:
    """Optuna's trials, up to the pool's width in flight: each asked, started, and told when
    its result arrives; a config already tried is told its known result (one in flight:
    pruned) without being measured again."""
    def counted() -> int:
        return sum(1 for t in state.trials if t.status in (DONE, FAILED)
                   and t.source != "default")

    study = new_study(objectives, seed, parallel=workers.width > 1)
    for trial in state.trials:
        add(study, trial, dims, objectives)
    queued: dict[Setup, str] = {}
    for setup, source in first:
        if setup not in tried and setup not in queued:
            queued[setup] = source
            study.enqueue_trial(params(setup, dims))
    asked_for: dict[int, optuna.trial.Trial] = {}
    repeats = 0
    while True:
        while (not state.stopped and len(controls) < workers.width
               and counted() + len(controls) < trials and not out_of_time()):
            asked = study.ask()
            chosen: dict[str, Value] = {}
            for dim in dims:
                if dim.active({**baseline.as_dict(), **chosen}):
                    chosen[dim.key] = suggest(asked, dim)
            setup = config_of(baseline, chosen, dims)
            if setup in tried:
                known = next(t for t in state.trials if t.setup == setup)
                if known.status == INTERRUPTED:        # in flight: its result is not in yet
                    study.tell(asked, state=optuna.trial.TrialState.PRUNED)
                else:
                    tell(study, asked, known, objectives)
                repeats += 1
                if repeats > REPEATS_BEFORE_EXHAUSTED:
                    state.stopped = "the sampler asked only for configs already tried"
                    break
                continue
            repeats = 0
            asked_for[begin(setup, queued.pop(setup, "sampler"))] = asked
        if not controls:
            break
        done = finished()
        if done is None:
            for asked in asked_for.values():
                study.tell(asked, state=optuna.trial.TrialState.FAIL)
            break
        for trial in done:              # what is still in flight finishes, whatever stopped
            tell(study, asked_for.pop(trial.number), trial, objectives)


def _required(evaluate: EvaluateSetup | None) -> EvaluateSetup:
    if evaluate is None:
        raise ValueError("run_combo needs an evaluate or a pool")
    return evaluate


def _default_trial(state: ComboState) -> Trial | None:
    return next((t for t in state.trials if t.setup == state.default and t.control is None
                 and t.status == DONE), None)
