"""Batched decoding gives every request the tokens it gets alone (fp32, greedy)."""

import threading

import pytest

from probe.engine.serving import ServingLoop
from tests.conftest import serve, tokens_of
from workloads.replayer import ClosedLoopReplayer
from workloads.trace_records import Trace, TraceRequest

SHAPES = [(9, 6), (13, 4), (5, 9), (11, 5), (7, 3), (15, 7), (6, 8), (12, 2)]


def burst_trace() -> Trace:
    """Everything arrives at once, so the batchers have company to batch."""
    return Trace("burst", tuple(TraceRequest(0.0, n, out, id=f"r{i}")
                                for i, (n, out) in enumerate(SHAPES)))


def replay_all(engine) -> None:
    trace = burst_trace()
    loop = ServingLoop(engine, ClosedLoopReplayer(trace, concurrency=len(SHAPES)))
    loop.run(threading.Event())
    assert loop.completed == len(SHAPES) and loop.failed == 0


@pytest.fixture
def reference_tokens(make_engine):
    engine = make_engine("decode=fullgraph")
    serve(engine, SHAPES)   # ids r0, r1, … as in burst_trace()
    return tokens_of(engine)


@pytest.mark.parametrize("opts", [
    ("batching=dynamic", "decode=fullgraph"),
    ("batching=dynamic", "decode=hf-generate"),
    ("batching=continuous",),
])
def test_batched_tokens_equal_unbatched(make_engine, reference_tokens, opts):
    engine = make_engine(*opts, max_new_tokens=16)
    replay_all(engine)
    records = engine.session.freeze().records
    assert max(r.batch_size for r in records) > 1          # really batched
    assert tokens_of(engine) == reference_tokens


def test_continuous_slots_report_their_own_kv_and_timing(make_engine):
    engine = make_engine("batching=continuous", max_new_tokens=16)
    replay_all(engine)
    for record in engine.session.freeze().records:
        assert record.ok
        assert record.start_s <= record.first_token_s <= record.end_s
        assert record.output_tokens == SHAPES[int(record.id[1:])][1]
        assert record.kv_cache_bytes > record.kv_cache_used_bytes > 0


def test_continuous_batching_compiles_one_step_graph(make_engine):
    engine = make_engine("batching=continuous", "compile=default", max_new_tokens=16)
    replay_all(engine)
    steps = [e for e in engine.session.freeze().events if e.function == "slot_step"]
    assert len(steps) == 1 and steps[0].kind == "compile"
    assert engine.session.freeze().breaks == ()
