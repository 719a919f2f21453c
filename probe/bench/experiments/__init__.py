"""The study's experiments, one module each, in study order. E1–E6, roofline and observer are
served back to back (shared runs run once); E7 and E8 replay open loop with engines of their
own, after them; so does peers (CTranslate2 alongside infertop's paths)."""

from __future__ import annotations

from probe.bench.experiment_ids import DEFAULT_EXPERIMENTS, EXPERIMENT_IDS, select_experiments
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
    peers,
    roofline,
)
from probe.bench.experiments.base import Experiment, OpenLoopExperiment

__all__ = ["DEFAULT_EXPERIMENTS", "EXPERIMENTS", "acceptance_checks", "select_experiments"]

EXPERIMENTS: dict[str, Experiment | OpenLoopExperiment] = {
    module.EXPERIMENT.template.id: module.EXPERIMENT
    for module in (e1_compile_modes, e2_graph_breaks, e3_dynamic_shapes, e4_bucketing,
                   e5_kv_cache, e6_combined, e7_batching, e8_kv_layout, roofline, observer,
                   capacity, peers)}
assert tuple(EXPERIMENTS) == EXPERIMENT_IDS, "experiment_ids.py lists the experiments in study order"


def acceptance_checks(sections: dict[str, dict]) -> dict:
    """The properties each experiment is expected to show, read back from its section."""
    checks: dict = {}
    for name, section in sections.items():
        if name in EXPERIMENTS and not section.get("error"):
            checks.update(EXPERIMENTS[name].checks(section))
    return checks
