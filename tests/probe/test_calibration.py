"""The dashboard's default rate: half of what the engine measurably serves one at a time."""

from __future__ import annotations

import numpy as np
import pytest

from probe.engine.calibration import (
    MAX_SPEED,
    MIN_SPEED,
    OPENING_REQUESTS,
    TARGET_LOAD,
    choose_speed,
    opening,
)
from workloads.trace import load_trace


def test_the_chosen_speed_offers_half_the_measured_capacity(make_engine):
    engine = make_engine("decode=fullgraph")
    trace = load_trace("chat")
    choice = choose_speed(engine, trace)
    first = np.array([r.timestamp_ms for r in trace.requests[:OPENING_REQUESTS]]) / 1000.0
    assert choice.trace_rps == pytest.approx((len(first) - 1) / (first[-1] - first[0]))
    assert MIN_SPEED <= choice.speed <= MAX_SPEED
    if MIN_SPEED < choice.speed < MAX_SPEED:
        assert choice.load == pytest.approx(TARGET_LOAD)
    assert f"×{choice.speed:.3g}" in choice.text() and "+ / -" in choice.text()
    # the load is a mean over the opening: the text says over what, and how long it lasts
    minutes = (first[-1] - first[0]) / choice.speed / 60
    assert f"over the trace's first {len(first)} requests, about {minutes:.1f} min" in (
        choice.text())
    assert engine.session.freeze().records == ()      # rehearsals are not requests


def test_the_opening_shape_is_the_mean_of_the_first_requests():
    trace = load_trace("chat")
    _, mean_in, mean_out = opening(trace)
    first = trace.requests[:OPENING_REQUESTS]
    assert mean_in == round(np.mean([r.input_length for r in first]))
    assert mean_out == round(np.mean([r.output_length for r in first]))


def test_the_opening_offers_the_work_the_next_minutes_offer():
    """The Azure conversation trace opens quieter than it goes on: its first 50 requests offer
    a sixth of the tokens per second its first 5,000 do. The opening the rate is set on must
    offer within 20% of that, or the baseline is saturated a minute in."""
    from probe.engine.workload_setup import prepare_workload

    trace = prepare_workload("azure-conv", buckets=None, max_input=512, max_output=512).trace

    def tokens_per_s(requests) -> float:
        span = (requests[-1].timestamp_ms - requests[0].timestamp_ms) / 1000.0
        return (len(requests) - 1) / span * np.mean([r.output_length for r in requests])

    rate, _, mean_out = opening(trace)
    assert rate is not None
    assert rate * mean_out == pytest.approx(tokens_per_s(trace.requests[:5000]), rel=0.2)
