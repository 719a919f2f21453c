"""The space `tune --search quick|exhaustive` searches: one dimension per registry option that
can change a warm run on this device, each conditional on what it needs — an option with a
`compiler` (gemv, wrapper, guards, …) exists only under compile != off, kv_layout only under
batching=continuous — so no config the search tries holds a compile-only option apart from
compile. Beside them three numeric ones, the engine settings that act only under an option
(probe/tune/tuned_settings.py): bucket_count under bucketing=on, max_batch under batching
dynamic or continuous, batch_window_ms under batching=dynamic. The keys outside the space keep
the baseline's values."""

from __future__ import annotations

from dataclasses import dataclass
from itertools import islice
from typing import Iterator, Mapping, Union

from probe.common.errors import BadInput
from probe.contract.options import OPTION_BY_KEY, OPTIONS, OptConfig
from probe.tune.tuned_settings import DEFAULTS, LIMITS, PARENTS, Setup, TunedSettings

# Never searched: every tune run is measured warm (its shapes compiled before the replay), so
# prewarm and the on-disk compile cache change only the cold start, which bench E1 measures.
COLD_START_ONLY = ("prewarm", "compile_cache")
# Exhaustive search refuses a space larger than this: at a minute or more a config, more
# would take the better part of a day on a CPU.
EXHAUSTIVE_LIMIT = 128
# The numeric dimensions' values: exhaustive tries each, quick samples the integers between
# the ends (log scale). Three values each, the default in the middle, so that a numeric
# dimension at most triples the configs under its option and a small space (--space
# compile,bucketing,bucket_count: 16 configs) stays far under EXHAUSTIVE_LIMIT: the planner's
# 4 edges, half and twice (more edges than 8 compile more shapes than a warm-up should
# pay for); tune's 8 slots, half and twice; the 50 ms window, a fifth and twice (a
# window shorter than a decode step hardly batches, a longer one adds its wait to every lone
# request's latency).
LADDERS: dict[str, tuple[int, ...]] = {"bucket_count": (2, 4, 8), "max_batch": (4, 8, 16),
                                       "batch_window_ms": (10, 50, 100)}

Value = Union[str, int]


@dataclass(frozen=True)
class Dimension:
    key: str
    values: tuple[Value, ...]        # numeric: the ladder, lowest first
    parent: str = ""                 # active only when `parent` holds one of `parent_values`
    parent_values: tuple[str, ...] = ()
    numeric: bool = False

    def active(self, chosen: Mapping[str, Value]) -> bool:
        return not self.parent or chosen.get(self.parent) in self.parent_values


def dimensions(device: str, keys: tuple[str, ...] = ()) -> tuple[Dimension, ...]:
    """The space's dimensions on `device`, parents before children (the registry's order, the
    numeric ones last); `keys` limits it to those options and settings (empty: every option
    that applies and every setting at its ladder). A setting may carry its own values,
    `bucket_count=2/4/8`."""
    ladders = _ladders(keys)
    names = [k.split("=")[0].strip() for k in keys]
    unknown = [k for k in names if k not in OPTION_BY_KEY and k not in DEFAULTS]
    if unknown:
        raise BadInput(f"--space: unknown option(s) {', '.join(unknown)}; valid: "
                       f"{', '.join([*(o.key for o in OPTIONS), *DEFAULTS])}")
    out = []
    for option in OPTIONS:
        if option.key in COLD_START_ONLY or (keys and option.key not in names):
            continue
        if option.key == "tf32" and not device.startswith("cuda"):
            continue                 # served off on every other device
        if option.compiler:
            compiled = tuple(v for v in OPTION_BY_KEY["compile"].values if v != "off")
            out.append(Dimension(option.key, option.values, "compile", compiled))
        elif option.key == "kv_layout":
            out.append(Dimension(option.key, option.values, "batching", ("continuous",)))
        else:
            out.append(Dimension(option.key, option.values))
    for key in DEFAULTS:
        if keys and key not in names:
            continue
        parent, values = PARENTS[key]
        out.append(Dimension(key, ladders.get(key, LADDERS[key]), parent, values, True))
    return tuple(out)


def _ladders(keys: tuple[str, ...]) -> dict[str, tuple[int, ...]]:
    """`KEY=V/V/…` of --space: a numeric dimension's own values, each a whole number from 1
    to its limit."""
    out: dict[str, tuple[int, ...]] = {}
    for item in keys:
        if "=" not in item:
            continue
        key, _, text = (part.strip() for part in item.partition("="))
        if key not in DEFAULTS:
            raise BadInput(f"--space {item}: only {', '.join(DEFAULTS)} take values")
        try:
            values = tuple(sorted({int(v) for v in text.split("/") if v.strip()}))
        except ValueError:
            values = ()
        if not values or not all(1 <= v <= LIMITS[key] for v in values):
            raise BadInput(f"--space {item}: expected whole numbers from 1 to {LIMITS[key]} "
                           f"separated by /, e.g. {key}="
                           + "/".join(str(v) for v in LADDERS[key]))
        out[key] = values
    return out


def check_space(baseline: OptConfig, dims: tuple[Dimension, ...]) -> None:
    """A setting in the space whose option is neither in it nor set by the baseline would
    never act: refused, naming the option it needs."""
    keys = {d.key for d in dims}
    for dim in dims:
        if dim.numeric and dim.parent not in keys and not dim.active(baseline.as_dict()):
            raise BadInput(f"--space {dim.key}: acts only with {dim.parent}="
                           f"{'|'.join(dim.parent_values)}, which neither the baseline "
                           f"(--opt) nor the space sets")


def config_of(baseline: OptConfig, chosen: Mapping[str, Value],
              dims: tuple[Dimension, ...]) -> Setup:
    """The baseline with the chosen values; an inactive dimension is served at its default
    (an option) or unset (a setting), an active setting not chosen at tune's default."""
    values: dict[str, Value] = dict(baseline.as_dict())
    values.update(chosen)
    settings: dict[str, int] = {}
    for dim in dims:
        if dim.numeric:
            if dim.active(values):
                settings[dim.key] = int(values.get(dim.key, DEFAULTS[dim.key]))
        elif not dim.active(values):
            values[dim.key] = OPTION_BY_KEY[dim.key].default
    # a setting outside the space acts at tune's default wherever its option makes it act
    options = OptConfig(**{k: str(v) for k, v in values.items() if k in OPTION_BY_KEY})
    for key, (parent, acting) in PARENTS.items():
        if key not in settings and getattr(options, parent) in acting:
            settings[key] = DEFAULTS[key]
    return Setup(options, TunedSettings(**settings))


def chosen_of(setup: Setup, dims: tuple[Dimension, ...]) -> dict[str, Value]:
    """The active dimensions' values of a setup: what an Optuna trial's parameters are."""
    values: dict[str, Value] = {**setup.options.as_dict(), **setup.settings.as_dict()}
    return {d.key: values[d.key] for d in dims if d.active(values) and d.key in values}


def every_config(baseline: OptConfig, dims: tuple[Dimension, ...]) -> Iterator[Setup]:
    """Every setup of the space, once each. A plain product rather than Optuna's
    GridSampler, which has no conditional dimensions."""
    def walk(i: int, chosen: dict[str, Value]) -> Iterator[dict[str, Value]]:
        if i == len(dims):
            yield dict(chosen)
            return
        dim = dims[i]
        context = {**baseline.as_dict(), **chosen}
        if not dim.active(context):
            yield from walk(i + 1, chosen)
            return
        for value in dim.values:
            chosen[dim.key] = value
            yield from walk(i + 1, chosen)
        del chosen[dim.key]
    seen: set[Setup] = set()
    for chosen in walk(0, {}):
        config = config_of(baseline, chosen, dims)
        if config not in seen:
            seen.add(config)
            yield config


def space_size(baseline: OptConfig, dims: tuple[Dimension, ...], limit: int) -> int:
    """How many configs the space holds, counted up to `limit` + 1 (enough to refuse it)."""
    return sum(1 for _ in islice(every_config(baseline, dims), limit + 1))
