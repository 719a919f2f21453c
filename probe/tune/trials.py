"""One config tried by `tune --search quick|exhaustive`: what it measured beside its control
(the best config so far, rerun alternated with it on the same requests), its figures relative
to the default config (its ratio to the control times the control's own ratio to the
default: the machine's drift between steps cancels in each ratio), and the constraints it met.
Values only, round-tripped through tune.json for `--resume`."""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Mapping

from probe.common.errors import BadInput
from probe.common.shown import shown
from probe.contract.figures import NOT_RECORDED, EnergyStats, SegmentStats
from probe.contract.options import CHOICES, OptConfig
from probe.runs.spread import Spread
from probe.session_store.record_ranges import TRIAL, TRIAL_CONSTRAINT, TRIAL_RATIO, Bound
from probe.tune.candidates import DRIFTING
from probe.tune.search import Measured
from probe.tune.tuned_settings import LIMITS, Setup, TunedSettings

DONE, FAILED, INTERRUPTED = "done", "failed", "interrupted"
# the figures compared, each with whether higher is better; energy: joules per good token
# (EnergyStats.j_per_good_token, probe/analysis/energy.py), fewer is better
FIGURES = {"goodput": True, "tokens": True, "p95": False, "energy": False}
ENERGY = "energy"


@dataclass(frozen=True)
class Ratio:
    """a / b of two figures' medians and the range their repeats allow (low/high over
    high/low): 1.2 [1.1, 1.3] is 20% more, 10 to 30% by the repeats."""
    value: float
    low: float
    high: float

    @classmethod
    def of(cls, a: Spread, b: Spread) -> Ratio | None:
        if not a.median or not b.median:
            return None
        low = a.low / b.high if a.low is not None and b.high else a.median / b.median
        high = a.high / b.low if a.high is not None and b.low else a.median / b.median
        return cls(a.median / b.median, low, high)

    def times(self, other: Ratio) -> Ratio:
        return Ratio(self.value * other.value, self.low * other.low, self.high * other.high)

    def as_dict(self) -> dict:
        return {"ratio": self.value, "interval": [self.low, self.high]}

    @classmethod
    def from_dict(cls, raw: Mapping | None) -> Ratio | None:
        if not raw:
            return None
        low, high = raw["interval"]
        return cls(raw["ratio"], low, high)


ONE = Ratio(1.0, 1.0, 1.0)


@dataclass(frozen=True)
class Constraint:
    bound: float
    value: float | None
    met: bool
    why: str = ""

    def as_dict(self) -> dict:
        return {"bound": self.bound, "value": self.value, "met": self.met, "why": self.why}


@dataclass(frozen=True)
class Bounds:
    """What a trial must meet to count: --slo-target's attainment (at a rate), --max-memory,
    --max-drift, --amortize, --max-joules-per-token (joules per good token)."""
    slo_target: float | None = None
    max_memory: float | None = None
    max_drift: float | None = None
    amortize: int | None = None
    max_joules_per_token: float | None = None


@dataclass(frozen=True)
class Trial:
    number: int
    options: OptConfig
    status: str                      # done | failed | interrupted
    source: str = ""                 # default | greedy path | data hint | sampler | grid
    reason: str = ""
    control: OptConfig | None = None
    goodput_rps: float | None = None
    p95_ms: float | None = None
    tokens_per_s: float | None = None
    slo_attainment: float | None = None
    drift: float | None = None
    kv_peak_bytes: int | None = None
    compile_s: float | None = None
    latency_p50_ms: float | None = None
    vs_control: dict[str, Ratio] = field(default_factory=dict)
    vs_default: dict[str, Ratio] = field(default_factory=dict)
    constraints: dict[str, Constraint] = field(default_factory=dict)
    measured: dict | None = None     # Measured.as_dict(): the spreads and the sessions
    j_per_good_token: float | None = None    # the first run's (EnergyStats.j_per_good_token)
    energy_unavailable: str | None = None    # why energy was not measured (None: it was)
    settings: TunedSettings = TunedSettings()        # bucket count, slots, window it served
    control_settings: TunedSettings | None = None

    @property
    def setup(self) -> Setup:
        return Setup(self.options, self.settings)

    @property
    def control_setup(self) -> Setup | None:
        if self.control is None:
            return None
        return Setup(self.control, self.control_settings or TunedSettings())

    @property
    def feasible(self) -> bool:
        return self.status == DONE and all(c.met for c in self.constraints.values())

    def as_dict(self) -> dict:
        return {"number": self.number, "options": self.options.as_dict(),
                "settings": self.settings.as_dict(),
                "label": self.setup.label(), "status": self.status, "source": self.source,
                "reason": self.reason,
                "control": self.control.as_dict() if self.control else None,
                "control_settings": (self.control_settings.as_dict()
                                     if self.control_settings else None),
                "goodput_rps": self.goodput_rps, "p95_ms": self.p95_ms,
                "tokens_per_s": self.tokens_per_s, "slo_attainment": self.slo_attainment,
                "drift": self.drift, "kv_peak_bytes": self.kv_peak_bytes,
                "compile_s": self.compile_s, "latency_p50_ms": self.latency_p50_ms,
                "vs_control": {k: r.as_dict() for k, r in self.vs_control.items()},
                "vs_default": {k: r.as_dict() for k, r in self.vs_default.items()},
                "constraints": {k: c.as_dict() for k, c in self.constraints.items()},
                "j_per_good_token": self.j_per_good_token,
                "energy_unavailable": self.energy_unavailable,
                "feasible": self.feasible, "measured": self.measured}

    @classmethod
    def from_dict(cls, raw: Mapping) -> Trial:
        def ratios(key: str) -> dict[str, Ratio]:
            out = {k: Ratio.from_dict(v) for k, v in (raw.get(key) or {}).items()}
            return {k: v for k, v in out.items() if v is not None}
        return cls(
            raw["number"], OptConfig(**raw["options"]), raw["status"], raw.get("source", ""),
            raw.get("reason", ""), OptConfig(**raw["control"]) if raw.get("control") else None,
            raw.get("goodput_rps"), raw.get("p95_ms"), raw.get("tokens_per_s"),
            raw.get("slo_attainment"), raw.get("drift"), raw.get("kv_peak_bytes"),
            raw.get("compile_s"), raw.get("latency_p50_ms"), ratios("vs_control"),
            ratios("vs_default"),
            {k: Constraint(c["bound"], c["value"], c["met"], c.get("why", ""))
             for k, c in (raw.get("constraints") or {}).items()},
            raw.get("measured"), raw.get("j_per_good_token"), raw.get("energy_unavailable"),
            TunedSettings.from_dict(raw.get("settings")),
            (TunedSettings.from_dict(raw["control_settings"])
             if raw.get("control_settings") is not None else None))


def saved_trial(raw: object, where: str) -> Trial:
    """A trial as tune.json saved it (`--resume`), every field checked against its type and
    its range (probe/session_store/record_ranges.py: TRIAL); BadInput naming `where` and the
    field otherwise."""
    if type(raw) is not dict:
        raise BadInput(f"{where}: expected an object, got {shown(raw)}")
    number = raw.get("number")
    if type(number) is not int:
        raise BadInput(f"{where}.number: expected a whole number, got {shown(number)}")
    for name, bound in TRIAL.items():
        _number(raw.get(name), bound, f"{where}.{name}", null=True)
    if raw.get("status") not in (DONE, FAILED, INTERRUPTED):
        raise BadInput(f"{where}.status: expected one of {DONE}, {FAILED}, {INTERRUPTED}, "
                       f"got {shown(raw.get('status'))}")
    for name in ("source", "reason"):
        if type(raw.get(name, "")) is not str:
            raise BadInput(f"{where}.{name}: expected a string, got {shown(raw.get(name))}")
    if raw.get("energy_unavailable") is not None and type(raw["energy_unavailable"]) is not str:
        raise BadInput(f"{where}.energy_unavailable: expected a string or null, got "
                       f"{shown(raw['energy_unavailable'])}")
    if "options" not in raw:        # a missing status was refused above
        raise BadInput(f"{where}: field 'options' is missing")
    _options(raw["options"], f"{where}.options")
    if raw.get("control") is not None:
        _options(raw["control"], f"{where}.control")
    for name in ("settings", "control_settings"):
        _settings(raw.get(name), f"{where}.{name}")
    for name in ("vs_control", "vs_default"):
        for key, ratio in _object_of(raw.get(name), f"{where}.{name}").items():
            _ratio(ratio, f"{where}.{name}[{shown(key)}]")
    for key, constraint in _object_of(raw.get("constraints"), f"{where}.constraints").items():
        _constraint(constraint, f"{where}.constraints[{shown(key)}]")
    measured = raw.get("measured")
    if measured is not None:
        sessions = _object_of(measured, f"{where}.measured").get("sessions", [])
        if type(sessions) is not list or any(type(p) is not str for p in sessions):
            raise BadInput(f"{where}.measured.sessions: expected a list of paths, got "
                           f"{shown(sessions)}")
    return Trial.from_dict(raw)


def _object_of(value: object, where: str) -> dict:
    if value is None:
        return {}
    if type(value) is not dict:
        raise BadInput(f"{where}: expected an object, got {shown(value)}")
    return value


def _options(value: object, where: str) -> None:
    options = _object_of(value, where)
    unknown = sorted(set(options) - set(CHOICES))
    if unknown:
        raise BadInput(f"{where}: unknown option {shown(unknown[0])}; valid keys: "
                       f"{', '.join(CHOICES)}")
    try:
        OptConfig(**options)
    except BadInput as exc:
        raise BadInput(f"{where}: {exc}") from None


def _settings(value: object, where: str) -> None:
    for key, setting in _object_of(value, where).items():
        if key not in LIMITS:
            raise BadInput(f"{where}: unknown setting {shown(key)}; valid: "
                           f"{', '.join(LIMITS)}")
        if type(setting) is not int or not 1 <= setting <= LIMITS[key]:
            raise BadInput(f"{where}.{key}: expected a whole number from 1 to "
                           f"{LIMITS[key]:,}, got {shown(setting)}")


def _number(value: object, bound: Bound, where: str, *, null: bool = False) -> None:
    """A finite number within `bound` (or None, where `null`); BadInput naming `where`."""
    if value is None and null:
        return
    if type(value) not in (int, float) or not math.isfinite(value):  # type: ignore[arg-type]
        raise BadInput(f"{where}: expected a finite number{' or null' if null else ''}, got "
                       f"{shown(value)}")
    problem = bound.problem(value)
    if problem is not None:
        raise BadInput(f"{where}: {problem}")


def _ratio(value: object, where: str) -> None:
    if value is None:
        return
    ratio = _object_of(value, where)
    interval = ratio.get("interval")
    if not (type(interval) is list and len(interval) == 2):
        raise BadInput(f"{where}.interval: expected [low, high], got {shown(interval)}")
    for name, number in (("ratio", ratio.get("ratio")), ("interval[0]", interval[0]),
                         ("interval[1]", interval[1])):
        _number(number, TRIAL_RATIO, f"{where}.{name}")


def _constraint(value: object, where: str) -> None:
    constraint = _object_of(value, where)
    for name in ("bound", "value", "met"):
        if name not in constraint:
            raise BadInput(f"{where}: field {name!r} is missing")
    for name in ("bound", "value"):
        if name == "bound" or constraint.get(name) is not None:
            _number(constraint.get(name), TRIAL_CONSTRAINT, f"{where}.{name}")
    if type(constraint.get("met")) is not bool:
        raise BadInput(f"{where}.met: expected true or false, got {shown(constraint.get('met'))}")
    if type(constraint.get("why", "")) is not str:
        raise BadInput(f"{where}.why: expected a string, got {shown(constraint.get('why'))}")


def spreads(measured: Measured) -> dict[str, Spread]:
    """Each compared figure's spread: goodput over the repeats; p95 and tokens/s, the first
    run's (one value)."""
    segment = measured.segment
    return {"goodput": measured.figure,
            "p95": Spread.of([measured.p95_ms]),
            "tokens": Spread.of([segment.tokens_per_s if segment else None]),
            "latency_p50": Spread.of([segment.latency_ms.p50 if segment else None]),
            ENERGY: Spread.of([energy_of(segment).j_per_good_token])}


def energy_of(segment: SegmentStats | None) -> EnergyStats:
    """A run's energy figures (probe/analysis/energy.py), or why there are none."""
    if segment is None:
        return EnergyStats(unavailable="no run finished")
    return segment.energy or EnergyStats(unavailable=NOT_RECORDED)


def measured_trial(number: int, setup: Setup, measured: Measured, *, source: str,
                   control: Trial | None) -> Trial:
    """A finished trial from what it measured; its ratios to the default go through its
    control's (None: it is the default itself)."""
    segment = measured.segment
    vs_control: dict[str, Ratio] = {}
    vs_default: dict[str, Ratio] = {}
    mine = spreads(measured)
    if control is None:
        vs_default = {k: ONE for k, s in mine.items() if s.median}
    elif measured.control is not None:
        theirs = spreads(measured.control)
        for key in mine:
            ratio = Ratio.of(mine[key], theirs[key])
            if ratio is None:
                continue
            vs_control[key] = ratio
            if key in control.vs_default:
                vs_default[key] = ratio.times(control.vs_default[key])
    return Trial(number, setup.options, DONE, source, "", control.options if control else None,
                 measured.goodput_rps, measured.p95_ms,
                 segment.tokens_per_s if segment else None, measured.slo_attainment,
                 measured.drift, segment.kv_cache_peak_bytes if segment else None,
                 segment.compile_s if segment else None,
                 segment.latency_ms.p50 if segment else None, vs_control, vs_default, {},
                 measured.as_dict(), energy_of(segment).j_per_good_token,
                 energy_of(segment).unavailable, setup.settings,
                 control.settings if control else None)


def judged(trial: Trial, bounds: Bounds, default: Trial | None) -> Trial:
    """The trial with its constraints decided."""
    if trial.status != DONE:
        return trial
    out: dict[str, Constraint] = {}
    if bounds.slo_target is not None:
        value = trial.slo_attainment
        out["slo_attainment"] = Constraint(bounds.slo_target, value,
                                           value is not None and value >= bounds.slo_target)
    if bounds.max_memory is not None:
        value = trial.kv_peak_bytes
        out["memory"] = Constraint(bounds.max_memory, value,
                                   value is not None and value <= bounds.max_memory)
    if bounds.max_drift is not None:
        drifts = any(getattr(trial.options, k) != getattr(OptConfig(), k) for k in DRIFTING)
        value = trial.drift
        if value is None:
            # tokens the fp32 default would give are what it serves: nothing can drift
            met = not drifts
            why = "" if met else "drift not measured (no sampled request)"
        else:
            met, why = value <= bounds.max_drift, ""
        out["drift"] = Constraint(bounds.max_drift, value, met, why)
    if bounds.amortize is not None:
        out["amortized"] = amortized(trial, bounds.amortize, default)
    if bounds.max_joules_per_token is not None:
        out["energy"] = energy_bound(trial, bounds.max_joules_per_token)
    return replace(trial, constraints=out)


def energy_bound(trial: Trial, joules: float) -> Constraint:
    """Its own joules per good token (the first run's, absolute: the bound is the user's J)
    must be at most `joules`; unmeasured, or no good token at all, misses it."""
    value = trial.j_per_good_token
    if trial.energy_unavailable is not None:
        return Constraint(joules, None, False, f"energy not measured: {trial.energy_unavailable}")
    if value is None:
        return Constraint(joules, None, False, "no good token (no request met the SLO)")
    return Constraint(joules, value, value <= joules)


def amortized(trial: Trial, requests: int, default: Trial | None) -> Constraint:
    """Its compile seconds must be paid back within `requests` requests: compile_s ≤ N × the
    per-request saving against the default (the default's p50 latency × (1 − this trial's
    p50 ratio to it)). Bound and value in seconds."""
    compile_s = trial.compile_s or 0.0
    ratio = trial.vs_default.get("latency_p50")
    base_ms = default.latency_p50_ms if default else None
    if compile_s == 0.0:
        return Constraint(0.0, 0.0, True, "nothing compiled")
    if ratio is None or not base_ms:
        return Constraint(0.0, compile_s, False, "per-request saving not measured")
    saving_s = base_ms / 1000 * (1 - ratio.value)
    payback = requests * saving_s
    if saving_s <= 0:
        return Constraint(payback, compile_s, False,
                          "no per-request saving against the default: never paid back")
    return Constraint(payback, compile_s, compile_s <= payback,
                      f"{compile_s:.1f} s of compile against {saving_s * 1000:.1f} ms saved "
                      f"a request × {requests}")


def objective_value(trial: Trial, name: str) -> float | None:
    """The figure `name` of a trial relative to the default (higher better for goodput and
    tokens, lower for p95 and energy): what the sampler and the best are judged on."""
    ratio = trial.vs_default.get(name)
    return None if ratio is None else ratio.value


def best(trials: list[Trial], objective: str) -> Trial | None:
    """The feasible trial with the best value of `objective`; of equals, the first."""
    scored = [(t, objective_value(t, objective)) for t in trials if t.feasible]
    ranked = [(t, v) for t, v in scored if v is not None]
    if not ranked:
        return None
    sign = 1 if FIGURES[objective] else -1
    return max(ranked, key=lambda tv: (sign * tv[1], -tv[0].number))[0]
