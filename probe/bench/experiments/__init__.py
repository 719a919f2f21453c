"""The study's experiments, one module each, in study order. E1–E6, roofline and observer are
served back to back (shared runs run once); E7 and E8 replay open loop with engines of their
own, after them."""

from __future__ import annotations

from probe.bench.experiments import (
    capacity,
    e1_compile_modes,
    e2_graph_breaks,
    e3_dynamic_shapes,
    e4_bucketing,
    e5_kv_cache,
    e6_combined,
    e7_batching,
    e8_kv_layout,
    observer,
    roofline,
)
from probe.bench.experiments.base import Experiment, OpenLoopExperiment
from probe.contract.errors import ConfigError

EXPERIMENTS: dict[str, Experiment | OpenLoopExperiment] = {
    module.EXPERIMENT.template.id: module.EXPERIMENT
    for module in (e1_compile_modes, e2_graph_breaks, e3_dynamic_shapes, e4_bucketing,
                   e5_kv_cache, e6_combined, e7_batching, e8_kv_layout, roofline, observer,
                   capacity)}
# Asked for by name only: capacity at the SLO needs --slo, and runs a search per config.
OPT_IN = ("capacity",)
ALL_EXPERIMENTS = tuple(name for name in EXPERIMENTS if name not in OPT_IN)


def select_experiments(text: str | None) -> tuple[str, ...]:
    """`E1,E4,roofline` → those ids in study order."""
    if not text:
        return ALL_EXPERIMENTS
    lookup = {name.lower(): name for name in EXPERIMENTS}
    wanted = set()
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        if part.lower() not in lookup:
            raise ConfigError(f"--experiments: unknown experiment {part!r}; choose from "
                              f"{', '.join(EXPERIMENTS)}")
        wanted.add(lookup[part.lower()])
    if not wanted:
        raise ConfigError("--experiments: nothing to run")
    return tuple(n for n in EXPERIMENTS if n in wanted)


def acceptance_checks(sections: dict[str, dict]) -> dict:
    """The properties each experiment is expected to show, read back from its section."""
    checks: dict = {}
    for name, section in sections.items():
        if name in EXPERIMENTS and not section.get("error"):
            checks.update(EXPERIMENTS[name].checks(section))
    return checks
