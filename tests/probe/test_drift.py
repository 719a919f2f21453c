"""Drift: a config's tokens against the fp32 eager reference, recomputable from the records."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from probe.analysis.drift import drift_stats, first_difference
from probe.analysis.stats import session_segments
from tests.conftest import serve

token_lists = st.lists(st.integers(0, 5), min_size=1, max_size=12)


@given(pairs=st.lists(st.tuples(token_lists, token_lists), min_size=1, max_size=8))
def test_drift_equals_a_numpy_recomputation(pairs):
    from tests.conftest import synthetic_record as record
    records = [replace(record(f"r{i}", i, latency_ms=10.0), tokens=tuple(t))
               for i, (t, _) in enumerate(pairs)]
    references = {f"r{i}": tuple(ref) for i, (_, ref) in enumerate(pairs)}
    stats = drift_stats(records, references)
    equal = compared = 0
    firsts = []
    for tokens, ref in pairs:
        n = max(len(tokens), len(ref))
        a = np.full(n, -1)
        b = np.full(n, -2)
        a[:len(tokens)], b[:len(ref)] = tokens, ref
        same = a == b
        equal, compared = equal + int(same.sum()), compared + n
        if not same.all():
            firsts.append(int(np.argmin(same)) + 1)
    assert stats.token_agreement == pytest.approx(equal / compared)
    assert stats.exact_match == pytest.approx(1 - len(firsts) / len(pairs))
    assert stats.first_divergence == (float(np.median(firsts)) if firsts else None)


def test_first_difference_counts_positions_from_one():
    assert first_difference([1, 2, 3], [1, 2, 3]) is None
    assert first_difference([1, 9, 3], [1, 2, 3]) == 2
    assert first_difference([1, 2], [1, 2, 3]) == 3


def test_the_engine_samples_requests_and_computes_their_references(make_engine):
    engine = make_engine("decode=fullgraph", keep_tokens=False)
    records = serve(engine, [(5 + i, 4) for i in range(17)])
    sampled = [r for r in records if r.tokens is not None]
    assert [r.seq for r in sampled] == [0, 8, 16]       # 1 in drift_every (8), by seq
    assert engine.references_pending == 3
    assert engine.compute_references() == 3
    data = engine.session.freeze()
    assert set(data.references) == {r.id for r in sampled}
    drift = session_segments(data)[0].drift
    # fp32 eager is the reference itself: nothing drifts
    assert (drift.sampled_requests, drift.token_agreement, drift.exact_match) == (3, 1.0, 1.0)


def test_bf16_drift_is_measured_against_fp32(make_engine):
    engine = make_engine("decode=fullgraph", "precision=bf16")
    records = serve(engine, [(5 + i, 10) for i in range(9)])
    engine.compute_references()
    data = engine.session.freeze()
    drift = session_segments(data)[0].drift
    pairs = [(r.tokens, data.references[r.id]) for r in records if r.id in data.references]
    agreement = (sum(sum(a == b for a, b in zip(t, ref)) for t, ref in pairs)
                 / sum(len(t) for t, _ in pairs))
    assert drift.sampled_requests == len(pairs) == 2
    assert drift.token_agreement == pytest.approx(agreement)
