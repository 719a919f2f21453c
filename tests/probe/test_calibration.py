"""The dashboard's default rate: half of what the engine measurably serves one at a time."""

from __future__ import annotations

import numpy as np
import pytest

from probe.engine.calibration import (
    MAX_SPEED,
    MIN_SPEED,
    TARGET_LOAD,
    choose_speed,
    opening,
)
from workloads.trace import load_trace


def test_the_chosen_speed_offers_half_the_measured_capacity(make_engine):
    engine = make_engine("decode=fullgraph")
    trace = load_trace("chat")
    choice = choose_speed(engine, trace)
    first = np.array([r.timestamp_ms for r in trace.requests[:50]]) / 1000.0
    assert choice.trace_rps == pytest.approx((len(first) - 1) / (first[-1] - first[0]))
    assert MIN_SPEED <= choice.speed <= MAX_SPEED
    if MIN_SPEED < choice.speed < MAX_SPEED:
        assert choice.load == pytest.approx(TARGET_LOAD)
    assert f"×{choice.speed:.3g}" in choice.text() and "+ / -" in choice.text()
    assert engine.session.freeze().records == ()      # rehearsals are not requests


def test_the_opening_shape_is_the_mean_of_the_first_requests():
    trace = load_trace("chat")
    _, mean_in, mean_out = opening(trace)
    first = trace.requests[:50]
    assert mean_in == round(np.mean([r.input_length for r in first]))
    assert mean_out == round(np.mean([r.output_length for r in first]))
