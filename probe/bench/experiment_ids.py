"""The study's experiment ids in study order, torch-free, so `bench --experiments` is checked
before torch is imported (probe/bench/experiments/ checks its modules against this list)."""

from __future__ import annotations

from probe.common.errors import BadInput

EXPERIMENT_IDS = ("E1", "E2", "E3", "E4", "E5", "E6", "E7", "E8", "roofline", "observer",
                  "capacity", "peers")
# Asked for by name only: capacity at the SLO needs --slo and runs a search per config; peers
# needs an optional extra (CTranslate2) and serves a second engine.
OPT_IN = ("capacity", "peers")
DEFAULT_EXPERIMENTS = tuple(name for name in EXPERIMENT_IDS if name not in OPT_IN)


def select_experiments(text: str | None) -> tuple[str, ...]:
    """`E1,E4,roofline` → those ids in study order; None (no --experiments) is all of them but
    the opt-in ones."""
    if text is None:
        return DEFAULT_EXPERIMENTS
    lookup = {name.lower(): name for name in EXPERIMENT_IDS}
    wanted = set()
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        if part.lower() not in lookup:
            raise BadInput(f"--experiments: unknown experiment {part!r}; choose from "
                              f"{', '.join(EXPERIMENT_IDS)}")
        wanted.add(lookup[part.lower()])
    if not wanted:
        raise BadInput(f"--experiments {text!r}: nothing to run; choose from "
                          f"{', '.join(EXPERIMENT_IDS)} (or leave it out for all but capacity and peers)")
    return tuple(n for n in EXPERIMENT_IDS if n in wanted)
