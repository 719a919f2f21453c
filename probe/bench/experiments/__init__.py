"""The study's experiments, one module each, and REGISTRY, the one list of them in study order.
E1–E6, roofline and observer are served back to back (shared runs run once); the open-loop
ones replay with engines of their own, after them. A module is imported when first read, so
`bench --experiments` is checked before torch loads."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from importlib import import_module
from typing import TYPE_CHECKING, Union

from probe.common.errors import BadInput

if TYPE_CHECKING:
    from probe.bench.experiments.base import Experiment, OpenLoopExperiment
    from probe.runs.plan import Plan

# (id, module in this package): adding an experiment is its module plus its line here
REGISTRY: tuple[tuple[str, str], ...] = (
    ("E1", "e1_compile_modes"), ("E2", "e2_graph_breaks"), ("E3", "e3_dynamic_shapes"),
    ("E4", "e4_bucketing"), ("E5", "e5_kv_cache"), ("E6", "e6_combined"),
    ("E7", "e7_batching"), ("E8", "e8_kv_layout"), ("roofline", "roofline"),
    ("observer", "observer"), ("capacity", "capacity"), ("peers", "peers"))
# Asked for by name only: capacity at the SLO needs --slo and runs a search per config; peers
# needs an optional extra (CTranslate2) and serves a second engine.
OPT_IN = ("capacity", "peers")


class _Experiments(Mapping[str, "Union[Experiment, OpenLoopExperiment]"]):
    """id → its module's EXPERIMENT, in study order, each module imported when first read."""

    def __getitem__(self, name: str) -> Experiment | OpenLoopExperiment:
        module = dict(REGISTRY)[name]
        return import_module(f"{__name__}.{module}").EXPERIMENT

    def __iter__(self) -> Iterator[str]:
        return iter([name for name, _ in REGISTRY])

    def __len__(self) -> int:
        return len(REGISTRY)


EXPERIMENTS = _Experiments()


def select_experiments(text: str | None) -> tuple[str, ...]:
    """`E1,E4,roofline` → those ids in study order; None (no --experiments) is all of them but
    the opt-in ones."""
    ids = tuple(EXPERIMENTS)
    if text is None:
        return tuple(name for name in ids if name not in OPT_IN)
    lookup = {name.lower(): name for name in ids}
    parts = [p.strip() for p in text.split(",") if p.strip()]
    if unknown := [p for p in parts if p.lower() not in lookup]:
        raise BadInput(f"--experiments: unknown experiment {unknown[0]!r}; choose from "
                       f"{', '.join(ids)}")
    wanted = {lookup[part.lower()] for part in parts}
    if not wanted:
        raise BadInput(f"--experiments {text!r}: nothing to run; choose from "
                       f"{', '.join(ids)} (or leave it out for all but {' and '.join(OPT_IN)})")
    return tuple(n for n in ids if n in wanted)


def acceptance_checks(sections: dict[str, dict]) -> dict:
    """The properties each experiment is expected to show, read back from its section."""
    checks: dict = {}
    for name, section in sections.items():
        if name in EXPERIMENTS and not section.get("error"):
            checks.update(EXPERIMENTS[name].checks(section))
    return checks


def left_out(plan: Plan, experiments: tuple[str, ...]) -> list[str]:
    """What `--quick` left out of the chosen experiments, one line each with the way back."""
    return [note for name in experiments for note in EXPERIMENTS[name].left_out(plan)]


def measures_machine(experiments: tuple[str, ...]) -> bool:
    """Whether one of them reads the machine's bandwidth and GEMM throughput (the roofline's)."""
    return any(EXPERIMENTS[name].measures_machine for name in experiments)
