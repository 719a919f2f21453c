"""`infertop trace from-session`: a session's served arrivals become a trace, at the same
times, with the same lengths and ids (tests/probe/test_serve_http.py replays one a server
saved)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from probe.contract.records import RequestRecord
from probe.session_store.served_trace import served_trace
from workloads.trace import load_trace, write_trace


def _record(i: int, arrival_s: float, n_in: int, n_out: int, ok: bool) -> RequestRecord:
    return RequestRecord(id=f"q{i}", seq=i, config_id="c1", input_tokens=n_in,
                         padded_tokens=n_in, output_tokens=n_out if ok else 0,
                         arrival_s=arrival_s, start_s=arrival_s, first_token_s=None,
                         end_s=arrival_s, queue_ms=0.0, compile_stall_ms=0.0, encoder_ms=0.0,
                         decoder_ms=0.0, ttft_ms=None, tpot_ms=None, latency_ms=0.0,
                         kv_cache_bytes=0, kv_cache_used_bytes=0, kv_self_attention_bytes=0,
                         kv_cross_attention_bytes=0, error=None if ok else "cancelled")


@given(st.lists(st.tuples(st.floats(0, 1e5), st.integers(1, 512), st.integers(1, 512),
                          st.booleans()), min_size=1, max_size=30))
def test_the_trace_holds_every_served_request_in_arrival_order(tmp_path_factory, rows):
    records = [_record(i, *row) for i, row in enumerate(rows)]
    trace, left_out = served_trace(records, "s")
    served = sorted((r for r in records if r.ok), key=lambda r: (r.arrival_s, r.seq))
    assert left_out == len(records) - len(served)
    assert [(q.id, q.input_length, q.output_length) for q in trace.requests] == [
        (r.id, r.input_tokens, r.output_tokens) for r in served]
    if served:
        path = tmp_path_factory.mktemp("t") / "t.jsonl"
        write_trace(trace, path)
        again = load_trace(str(path))
        assert [q.id for q in again.requests] == [q.id for q in trace.requests]
        for a, b in zip(again.requests, trace.requests):
            assert abs(a.timestamp_ms - b.timestamp_ms) < 1e-6 * max(1.0, b.timestamp_ms)
