import numpy as np
import pytest

from probe.common.errors import TraceError
from workloads.fitting import fit_to_model
from workloads.trace_records import Trace, TraceRequest


def _trace(inputs: list[int], outputs: list[int]) -> Trace:
    return Trace("t", tuple(TraceRequest(float(i), a, b) for i, (a, b) in enumerate(zip(inputs, outputs))))


def test_clip_counts_every_change_and_the_tokens_lost() -> None:
    rng = np.random.default_rng(0)
    inputs = rng.integers(1, 5000, 1000).tolist()
    outputs = rng.integers(1, 800, 1000).tolist()
    fitted, report = fit_to_model(_trace(inputs, outputs), max_input=512, max_output=256)
    assert fitted.input_lengths() == [min(x, 512) for x in inputs]
    assert fitted.output_lengths() == [min(x, 256) for x in outputs]
    assert report.inputs_changed == sum(x > 512 for x in inputs)
    assert report.outputs_changed == sum(x > 256 for x in outputs)
    assert report.inputs.tokens_before - report.inputs.tokens_after == sum(max(0, x - 512) for x in inputs)
    summary = report.summary()
    assert f"{report.inputs_changed} of 1000 clipped" in summary
    assert "longest" in summary and str(max(inputs)) in summary


def test_nothing_to_change_is_still_reported() -> None:
    trace = _trace([10, 20], [5, 6])
    fitted, report = fit_to_model(trace)
    assert fitted == trace
    assert report.inputs_changed == report.outputs_changed == 0
    assert "none changed" in report.summary()


def test_scale_keeps_ratios_and_maps_the_longest_onto_the_limit() -> None:
    inputs = [100, 1000, 10_000, 40_000]
    fitted, report = fit_to_model(_trace(inputs, [8] * 4), max_input=400, policy="scale")
    assert fitted.input_lengths() == [1, 10, 100, 400]
    assert report.inputs.factor == pytest.approx(0.01)
    assert report.inputs_changed == 4 and report.outputs_changed == 0
    assert "scaled ×0.01" in report.summary()


def test_scale_by_a_quantile_clips_the_rest_and_says_so() -> None:
    inputs = list(range(1, 101)) + [100_000]
    fitted, report = fit_to_model(_trace(inputs, [1] * 101), max_input=50, policy="scale", scale_quantile=0.99)
    reference = float(np.quantile(inputs, 0.99))
    assert max(fitted.input_lengths()) == 50
    assert report.inputs.factor == pytest.approx(50 / reference)
    assert report.inputs.clipped == sum(1 for x in inputs if round(x * 50 / reference) > 50)
    assert report.inputs.clipped >= 1 and "clipped after scaling" in report.summary()


def test_text_is_kept_and_mentioned() -> None:
    trace = Trace("t", (TraceRequest(0.0, 900, 5, text="long " * 900),))
    fitted, report = fit_to_model(trace)
    assert fitted.requests[0].text == trace.requests[0].text
    assert fitted.requests[0].input_length == 512
    assert "1 requests carry text" in report.summary()


def test_unknown_policy_names_the_choices() -> None:
    with pytest.raises(TraceError, match="clip, scale"):
        fit_to_model(_trace([1], [1]), policy="squash")
