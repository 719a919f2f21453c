"""The compile ledger on a t5-tiny engine (dynamo's eager backend): its calls per graph against
the steps the records imply, its compile seconds against the session's compile events, its
stalled requests against the records' compile stalls, and pay-back judged against the eager
twin served in the same session."""

from collections import Counter

from probe.analysis.compile_ledger import step_shares
from probe.contract.options import parse_opts
from probe.contract.records import COMPILING
from tests.conftest import serve

SHAPES = [(10, 4), (10, 5), (17, 3), (10, 2)]


def test_ledger_counts_each_graph_call_the_records_imply(make_engine):
    engine = make_engine("decode=fullgraph", "compile=default", max_new_tokens=8)
    serve(engine, SHAPES)
    compiled_id = engine.config_id
    engine.set_options(parse_opts(["decode=fullgraph"]))
    serve(engine, SHAPES, start_seq=len(SHAPES))
    engine.flush_probes()
    data = engine.session.freeze()

    for config_id in (compiled_id, engine.config_id):
        records = [r for r in data.records if r.config_id == config_id]
        entries = [e for e in data.compile_ledger if e.config_id == config_id]
        calls = Counter()
        for e in entries:
            calls[e.function] += e.calls
        # one encode and one prefill per request, a decode_step for each later token
        assert calls["encode"] == len(records)
        assert calls["prefill_step"] == len(records)
        assert calls["decode_step"] == sum(r.output_tokens - 1 for r in records)
        # a graph per input width: the encoder's key holds it
        widths = {r.padded_tokens for r in records}
        encode_keys = [e.key for e in entries if e.function == "encode"]
        assert len(encode_keys) == len(widths)
        assert all(any(f"(1, {w})" in k for k in encode_keys) for w in widths)
        for e in entries:
            assert e.median_of == e.calls      # below the sample cap: every call kept
            assert e.runtime_ms_total > 0 and e.runtime_ms_median is not None

    compiled = [e for e in data.compile_ledger if e.config_id == compiled_id]
    event_s = sum(e.duration_s or 0.0 for e in data.events
                  if e.config_id == compiled_id and e.kind in COMPILING)
    assert event_s > 0
    assert abs(sum(e.compile_s for e in compiled) - event_s) < 1e-9
    stalled_records = {r.id for r in data.records
                       if r.config_id == compiled_id and r.compile_stall_ms > 0}
    assert {rid for e in compiled for rid in e.stalled_requests} == stalled_records
    # every compiled graph has an eager twin with the same key: judged, never guessed
    assert all(e.paid_back is not None for e in compiled)
    assert all(e.paid_back is None for e in data.compile_ledger if e.config_id != compiled_id)
    shares = step_shares(data.compile_ledger)
    assert abs(sum(v for (cid, _, _), v in shares.items() if cid == compiled_id) - 1) < 1e-9
