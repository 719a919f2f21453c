"""Output drift: how far a config's greedy tokens moved from the fp32, uncompiled reference for
the same requests. Computed from the tokens the records keep and the reference tokens the
engine computed for them, nothing else, so a saved session recomputes it exactly."""

from __future__ import annotations

from typing import Mapping, Sequence

from probe.common.percentile import median
from probe.contract.figures import DriftStats
from probe.contract.records import RequestRecord

REFERENCE = "fp32, compile off, fullgraph decode, batch 1"
RANDOM_WEIGHTS_CAVEAT = (
    "the preset model has random weights: its next-token logits are nearly flat, so a small "
    "numeric change flips greedy tokens far more often than in a trained model; drift here "
    "overstates what a real checkpoint shows (--model PATH measures yours)")


def first_difference(tokens: Sequence[int], reference: Sequence[int]) -> int | None:
    """1-based position of the first token that differs (a length difference counts), or None."""
    for position, (a, b) in enumerate(zip(tokens, reference), start=1):
        if a != b:
            return position
    if len(tokens) != len(reference):
        return min(len(tokens), len(reference)) + 1
    return None


def drift_stats(records: Sequence[RequestRecord],
                references: Mapping[str, Sequence[int]]) -> DriftStats | None:
    """Over the served records that kept tokens and have a reference; None when there are none."""
    pairs = [(r.tokens, references[r.id]) for r in records
             if r.ok and r.tokens is not None and r.id in references]
    if not pairs:
        return None
    equal = sum(sum(a == b for a, b in zip(t, ref)) for t, ref in pairs)
    compared = sum(max(len(t), len(ref)) for t, ref in pairs)
    firsts = [first_difference(t, ref) for t, ref in pairs]
    differing = [f for f in firsts if f is not None]
    return DriftStats(
        reference=REFERENCE, sampled_requests=len(pairs),
        token_agreement=equal / compared if compared else 1.0,
        exact_match=sum(f is None for f in firsts) / len(pairs),
        first_divergence=median(differing))


def drift_waiting(records: Sequence[RequestRecord], references: Mapping[str, Sequence[int]]) -> int:
    """Served records that kept their tokens for drift and have no reference yet."""
    return sum(1 for r in records if r.ok and r.tokens is not None and r.id not in references)
