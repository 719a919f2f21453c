"""Fit a production trace to what T5 serves (inputs and outputs up to 512 tokens by default).

`clip` cuts each length at the limit. `scale` multiplies every length by one factor, chosen so
the trace's `scale_quantile` (default 1.0: the longest request) lands on the limit; each
quantile moves by the same factor, so ratios between requests, and padding-waste fractions up to
rounding, are kept. Lengths never grow, round to the nearest whole token, and stay >= 1;
with a quantile below 1 the few above it are then clipped, and counted. Always reported.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from probe.common.errors import file_error
from probe.common.percentile import percentile
from workloads.trace_records import Trace

POLICIES: tuple[str, ...] = ("clip", "scale")


@dataclass(frozen=True)
class LengthChange:
    """What fitting did to one column (inputs or outputs)."""

    limit: int
    changed: int
    clipped: int  # requests left at the limit by clipping (for scale: those above the quantile)
    tokens_before: int
    tokens_after: int
    max_before: int
    max_after: int
    factor: float  # 1.0 for clip

    def describe(self, noun: str, requests: int) -> str:
        if self.changed == 0:
            return f"{noun}: none changed (longest {self.max_before} <= {self.limit})"
        share = 100.0 * self.changed / requests
        drop = 100.0 * (self.tokens_before - self.tokens_after) / self.tokens_before
        how = f"scaled ×{self.factor:.4g}" if self.factor != 1.0 else "clipped"
        extra = f", {self.clipped} clipped after scaling" if self.factor != 1.0 and self.clipped else ""
        return (
            f"{noun}: {self.changed} of {requests} {how} ({share:.1f}%){extra}; "
            f"tokens {self.tokens_before} -> {self.tokens_after} (-{drop:.1f}%); "
            f"longest {self.max_before} -> {self.max_after}"
        )


@dataclass(frozen=True)
class FitReport:
    policy: str
    max_input: int
    max_output: int
    requests: int
    inputs: LengthChange
    outputs: LengthChange
    text_requests: int  # their text is kept; the engine re-tokenizes and truncates at max_input

    @property
    def inputs_changed(self) -> int:
        return self.inputs.changed

    @property
    def outputs_changed(self) -> int:
        return self.outputs.changed

    def summary(self) -> str:
        lines = [
            f"fit to the model ({self.policy}, max input {self.max_input}, max output {self.max_output}):",
            "  " + self.inputs.describe("inputs", self.requests),
            "  " + self.outputs.describe("outputs", self.requests),
        ]
        if self.text_requests:
            lines.append(
                f"  {self.text_requests} requests carry text: kept whole; the engine re-tokenizes "
                f"and truncates to {self.max_input} tokens"
            )
        return "\n".join(lines)


def fit_to_model(
    trace: Trace,
    *,
    max_input: int = 512,
    max_output: int = 512,
    policy: str = "clip",
    scale_quantile: float = 1.0,
) -> tuple[Trace, FitReport]:
    if policy not in POLICIES:
        raise file_error(f"--fit: unknown policy {policy!r} (choose from: {', '.join(POLICIES)})")
    if max_input < 1 or max_output < 1:
        raise file_error(f"--max-input/--max-output: must be >= 1, got {max_input}/{max_output}")
    if not 0.0 < scale_quantile <= 1.0:
        raise file_error(f"--scale-quantile: must be in (0, 1], got {scale_quantile:g}")
    inputs_before = trace.input_lengths()
    outputs_before = trace.output_lengths()
    inputs_after, input_change = _fit_column(inputs_before, max_input, policy, scale_quantile)
    outputs_after, output_change = _fit_column(outputs_before, max_output, policy, scale_quantile)
    requests = tuple(
        request if (a, b) == (request.input_length, request.output_length)
        else replace(request, input_length=a, output_length=b)
        for request, a, b in zip(trace.requests, inputs_after, outputs_after)
    )
    report = FitReport(
        policy=policy,
        max_input=max_input,
        max_output=max_output,
        requests=len(requests),
        inputs=input_change,
        outputs=output_change,
        text_requests=sum(1 for r in trace.requests if r.text is not None),
    )
    return replace(trace, requests=requests), report


def _fit_column(lengths: list[int], limit: int, policy: str, quantile: float) -> tuple[list[int], LengthChange]:
    factor = 1.0
    if policy == "scale":
        reference = percentile(lengths, quantile * 100) or 0.0
        if reference > limit:
            factor = limit / reference
    fitted = []
    clipped = 0
    for length in lengths:
        value = max(1, int(math.floor(length * factor + 0.5))) if factor != 1.0 else length
        if value > limit:
            value = limit
            clipped += 1
        fitted.append(value)
    change = LengthChange(
        limit=limit,
        changed=sum(1 for a, b in zip(lengths, fitted) if a != b),
        clipped=clipped,
        tokens_before=sum(lengths),
        tokens_after=sum(fitted),
        max_before=max(lengths, default=0),
        max_after=max(fitted, default=0),
        factor=factor,
    )
    return fitted, change
