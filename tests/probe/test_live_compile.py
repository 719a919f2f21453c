"""A compile reaches the live view while it runs and the moment it ends, not with the request
that waited on it (on a CPU that request can wait minutes)."""

from __future__ import annotations

import threading

from probe.engine.process.live_reporter import LiveReporter
from probe.engine.serving import ServingLoop
from tests.conftest import request
from workloads.replayer import OpenLoopReplayer
from workloads.trace_records import Trace, TraceRequest


def build_elsewhere(reporter: LiveReporter):
    """Build a snapshot on another thread, as the engine process's publisher does."""
    built = []
    thread = threading.Thread(target=lambda: built.append(reporter.build()))
    thread.start()
    thread.join()
    return built[0]


def test_compiles_are_published_while_the_request_still_waits(make_engine):
    engine = make_engine("decode=fullgraph", "compile=default", "dynamic=off")
    trace = Trace("t", (TraceRequest(0.0, 5, 3),))
    reporter = LiveReporter(ServingLoop(engine, OpenLoopReplayer(trace)), "t")
    during, after = [], []
    probe = engine.probe
    real_start, real_end = probe._on_start, probe._on_end

    def on_start(args):
        real_start(args)
        during.append(build_elsewhere(reporter))

    def on_end(args):
        real_end(args)
        after.append(build_elsewhere(reporter))

    probe._on_start, probe._on_end = on_start, on_end
    probe.reset_dynamo()    # registers the wrapped callbacks
    engine.serve([request(engine, 0, 7, 3)])
    engine.serve([request(engine, 1, 9, 3)])   # a new length: recompiles under dynamic=off

    assert during and after
    for snapshot in during:   # in progress: which compile, who waits, and a stall that grows
        assert snapshot.compiling is not None
        assert snapshot.compiling.request_id in ("r0", "r1")
        assert snapshot.compiling.stall_s(snapshot.t_s) >= snapshot.compiling.waited_before_s
    for waiting in ("r0", "r1"):   # several compiles in a row: the stall never goes back
        stalls = [s.compiling.stall_s(s.t_s) for s in during if s.compiling.request_id == waiting]
        assert len(stalls) > 1 and stalls == sorted(stalls)
    # every compile names its function while it runs, the first of a frame too
    assert all(s.compiling.function for s in during)
    assert during[0].compiling.function == "encode"
    assert any(s.compiling.function == "encode" for s in during
               if s.compiling.request_id == "r1")
    # each ended compile is in the feed before its request has a record
    for snapshot in after:
        waiting = snapshot.compile_events[-1].request_id
        assert waiting in ("r0", "r1")
        assert waiting not in {r.id for r in snapshot.recent}
