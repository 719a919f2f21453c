"""`tune --search quick`'s first trial: the doctor's next step for the default config's measured
run — the one option change `infertop doctor` suggests on that run's session, read from the
diagnosis the session JSON was saved with (probe/session_store/snapshot.py attaches it), so
the search starts where the doctor would, then follows the greedy path."""

from __future__ import annotations

from typing import Mapping, Sequence

from probe.common.errors import BadInput
from probe.contract.options import OptConfig
from probe.session_store.snapshot import read_document
from probe.tune.space import COLD_START_ONLY, Dimension, chosen_of, config_of
from probe.tune.tuned_settings import Setup

SHOWN_WHY = 120          # characters of the doctor's reason kept as the trial's source


def doctor_advice(sessions: Sequence[str]) -> tuple[Mapping[str, str], str] | None:
    """The next step (its options and why) of the default's first run, None when that
    session has none (a healthy tail, nothing to suggest) or cannot be read."""
    if not sessions:
        return None
    try:
        document = read_document(sessions[0])
    except BadInput:
        return None
    for segment in document.get("segments") or []:
        step = (segment.get("diagnosis") or {}).get("next_step")
        if isinstance(step, dict) and isinstance(step.get("options"), dict):
            return step["options"], str(step.get("why", ""))
    return None


def doctor_seed(baseline: OptConfig, advice: tuple[Mapping[str, str], str] | None,
                dims: tuple[Dimension, ...]) -> list[tuple[Setup, str]]:
    """The baseline with the step's changes that lie in the space, as a setup of the space
    (a change outside it, or prewarm's cold start, is left out: the search varies only its
    space); [] when none remains."""
    if advice is None:
        return []
    changes, why = advice
    keys = {d.key for d in dims}
    kept = {k: v for k, v in changes.items() if k in keys and k not in COLD_START_ONLY}
    if not kept:
        return []
    try:
        options = OptConfig(**{**baseline.as_dict(), **kept})
    except BadInput:                # a value this version's registry does not hold
        return []
    setup = config_of(options, chosen_of(Setup(options), dims), dims)
    label = " ".join(f"{k}={v}" for k, v in kept.items())
    short = why if len(why) <= SHOWN_WHY else why[:SHOWN_WHY - 1] + "…"
    return [(setup, f"doctor's next step ({label}): {short}")]
