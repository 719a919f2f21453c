"""From a trace name and the CLI's limits to what the engine needs: the trace fitted to the
model, the bucket edges, and the static cache's length."""

from __future__ import annotations

from probe.common.errors import file_error
from probe.contract.prepared_workload import PreparedWorkload
from workloads.buckets import parse_bucket_edges, plan_buckets
from workloads.fitting import fit_to_model
from workloads.trace import load_trace

DEFAULT_BUCKETS = 4


def prepare_workload(trace_name: str, *, max_input: int = 512, max_output: int = 512,
                     buckets: str | None = None, bucket_count: int = DEFAULT_BUCKETS,
                     policy: str = "clip") -> PreparedWorkload:
    given = None if buckets is None else checked_edges(buckets, max_input)
    trace, fit = fit_to_model(load_trace(trace_name), max_input=max_input,
                              max_output=max_output, policy=policy)
    if given is not None:
        edges, source = given, "--buckets"
    else:
        edges = plan_buckets(trace.input_lengths(), bucket_count).edges
        source = f"planner (K={bucket_count})"
    return PreparedWorkload(trace, fit, tuple(edges), source,
                            max(trace.output_lengths(), default=1))


def checked_edges(buckets: str, max_input: int) -> tuple[int, ...]:
    """`--buckets` parsed, every edge at most `max_input`: inputs are cut there, so a higher edge
    would pad past what the model serves (and with continuous batching fail every request)."""
    edges = parse_bucket_edges(buckets)
    if edges[-1] > max_input:
        raise file_error(f"--buckets: edge {edges[-1]} is above --max-input {max_input}; inputs are "
                         f"cut at {max_input} tokens, so no edge may exceed it")
    return edges
