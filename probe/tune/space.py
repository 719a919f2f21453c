"""The space `tune --search quick|exhaustive` searches: one dimension per registry option that
can change a warm run on this device, each conditional on what it needs — an option with a
`compiler` (gemv, wrapper, guards, …) exists only under compile != off, kv_layout only under
batching=continuous — so no config the search tries holds a compile-only option apart from
compile. The keys outside the space keep the baseline's values."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator, Mapping

from probe.common.errors import BadInput
from probe.contract.options import OPTION_BY_KEY, OPTIONS, OptConfig

# Never searched: every tune run is measured warm (its shapes compiled before the replay), so
# prewarm and the on-disk compile cache change only the cold start, which bench E1 measures.
COLD_START_ONLY = ("prewarm", "compile_cache")
# Exhaustive search refuses a space larger than this: at a minute or more a config, more
# would take the better part of a day on a CPU.
EXHAUSTIVE_LIMIT = 128


@dataclass(frozen=True)
class Dimension:
    key: str
    values: tuple[str, ...]
    parent: str = ""                 # active only when `parent` holds one of `parent_values`
    parent_values: tuple[str, ...] = ()

    def active(self, chosen: Mapping[str, str]) -> bool:
        return not self.parent or chosen.get(self.parent) in self.parent_values


def dimensions(device: str, keys: tuple[str, ...] = ()) -> tuple[Dimension, ...]:
    """The space's dimensions on `device`, parents before children (the registry's order);
    `keys` limits it to those options (empty: every option that applies)."""
    unknown = [k for k in keys if k not in OPTION_BY_KEY]
    if unknown:
        raise BadInput(f"--space: unknown option(s) {', '.join(unknown)}; valid: "
                       f"{', '.join(o.key for o in OPTIONS)}")
    out = []
    for option in OPTIONS:
        if option.key in COLD_START_ONLY or (keys and option.key not in keys):
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
    return tuple(out)


def config_of(baseline: OptConfig, chosen: Mapping[str, str],
              dims: tuple[Dimension, ...]) -> OptConfig:
    """The baseline with the chosen values; an inactive dimension is served at its default."""
    values = baseline.as_dict()
    values.update(chosen)
    for dim in dims:
        if not dim.active(values):
            values[dim.key] = OPTION_BY_KEY[dim.key].default
    return OptConfig(**values)


def chosen_of(options: OptConfig, dims: tuple[Dimension, ...]) -> dict[str, str]:
    """The active dimensions' values of a config: what an Optuna trial's parameters are."""
    values = options.as_dict()
    return {d.key: values[d.key] for d in dims if d.active(values)}


def every_config(baseline: OptConfig, dims: tuple[Dimension, ...]) -> Iterator[OptConfig]:
    """Every config of the space, once each. A plain product rather than Optuna's
    GridSampler, which has no conditional dimensions."""
    def walk(i: int, chosen: dict[str, str]) -> Iterator[dict[str, str]]:
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
    seen: set[OptConfig] = set()
    for chosen in walk(0, {}):
        config = config_of(baseline, chosen, dims)
        if config not in seen:
            seen.add(config)
            yield config


def space_size(baseline: OptConfig, dims: tuple[Dimension, ...], limit: int) -> int:
    """How many configs the space holds, counted up to `limit` + 1 (enough to refuse it)."""
    count = 0
    for _ in every_config(baseline, dims):
        count += 1
        if count > limit:
            break
    return count
