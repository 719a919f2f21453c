"""Break-even with an eager side that generated no tokens: no per-token time to save against,
so no figure (it raised a TypeError on None before mypy checked the module)."""

from __future__ import annotations

from dataclasses import replace

from probe.analysis.stats import MIN_BREAK_EVEN_REQUESTS, break_even
from tests.conftest import synthetic_record as record


def test_an_eager_side_with_no_output_tokens_gives_no_break_even():
    n = MIN_BREAK_EVEN_REQUESTS
    compiled = [record(f"c{i}", i, latency_ms=10) for i in range(n)]
    eager = [replace(record(f"e{i}", i, latency_ms=50), output_tokens=0) for i in range(n)]
    assert break_even(30.0, compiled, eager) is None
    with_tokens = [record(f"e{i}", i, latency_ms=50) for i in range(n)]
    assert break_even(30.0, compiled, with_tokens) is not None
