"""The study's experiments, one module each, in study order. E1–E6, roofline and observer are
served back to back (shared runs run once); E7 and E8 replay open loop with engines of their
own, after them; so does peers (CTranslate2 alongside infertop's paths)."""

from __future__ import annotations

from probe.bench.experiments import (
    e1_compile_modes,
    e2_graph_breaks,
    e3_dynamic_shapes,
    e4_bucketing,
    e5_kv_cache,
    e6_combined,
    e7_batching,
    e8_kv_layout,
    observer,
    peers,
    roofline,
)
from probe.bench.experiments.base import Experiment, OpenLoopExperiment
from probe.contract.errors import ConfigError

EXPERIMENTS: dict[str, Experiment | OpenLoopExperiment] = {
    module.EXPERIMENT.template.id: module.EXPERIMENT
    for module in (e1_compile_modes, e2_graph_breaks, e3_dynamic_shapes, e4_bucketing,
                   e5_kv_cache, e6_combined, e7_batching, e8_kv_layout, roofline, observer,
                   peers)}
ALL_EXPERIMENTS = tuple(EXPERIMENTS)
# Asked for by name only: peers needs an optional extra and serves a second engine.
OPT_IN = ("peers",)


def select_experiments(text: str | None) -> tuple[str, ...]:
    """`E1,E4,roofline` → those ids in study order."""
    if not text:
        return tuple(n for n in ALL_EXPERIMENTS if n not in OPT_IN)
    lookup = {name.lower(): name for name in ALL_EXPERIMENTS}
    wanted = set()
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        if part.lower() not in lookup:
            raise ConfigError(f"--experiments: unknown experiment {part!r}; choose from "
                              f"{', '.join(ALL_EXPERIMENTS)}")
        wanted.add(lookup[part.lower()])
    if not wanted:
        raise ConfigError("--experiments: nothing to run")
    return tuple(n for n in ALL_EXPERIMENTS if n in wanted)


def acceptance_checks(sections: dict[str, dict]) -> dict:
    """The properties each experiment is expected to show, read back from its section."""
    checks: dict = {}
    for name, section in sections.items():
        if name in EXPERIMENTS and not section.get("error"):
            checks.update(EXPERIMENTS[name].checks(section))
    return checks
