"""The trace's shape in one line, shown from the dashboard's first frame while the engine
loads (it knows the workload before the engine has measured anything): issue 38's first
figures took 47 s, with nothing useful on screen meanwhile."""

from __future__ import annotations

from typing import Any

from probe.analysis.stats import summarize


def trace_shape(workload: Any) -> str:
    """ "trace chat: 400 requests over 6:40 (1.0 req/s at ×1), inputs p50 64 (max 480) tokens,
    outputs p50 32"; "" when there is no workload to read."""
    trace = getattr(workload, "trace", None)
    requests = getattr(trace, "requests", None)
    if trace is None or not requests:
        return ""
    span_s = (requests[-1].timestamp_ms - requests[0].timestamp_ms) / 1000.0
    rate = f", {(len(requests) - 1) / span_s:.2g} req/s at ×1" if span_s > 0 else ""
    inputs = summarize(r.input_length for r in requests)
    outputs = summarize(r.output_length for r in requests)
    minutes, seconds = divmod(int(span_s), 60)
    return (f"trace {trace.name}: {len(requests)} requests over {minutes}:{seconds:02d}{rate}; "
            f"inputs p50 {inputs.p50:.0f} (max {inputs.max:.0f}) tokens, outputs p50 "
            f"{outputs.p50:.0f}")
