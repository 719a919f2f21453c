"""The warm switch through real engine processes (t5-tiny): the side engine compiles and
prewarms compile=default beside the serving eager one, which serves on; after the cut over the
compiled config serves with no request waiting on a compile, in the same session. The
compiled config is the graph-break-free loop under dynamo's eager backend: the switch is what
is tested, and tracing generate() or inductor's kernels would make this one test minutes here."""

from __future__ import annotations

import argparse
import dataclasses
import time

import pytest

from probe.analysis.side_compile_cost import side_compile_cost, side_compiles
from probe.analysis.stats import session_segments
from probe.contract import protocol
from probe.contract.options import OptConfig
from probe.contract.protocol import WarmFailed, WarmReady
from probe.engine.process.engine_process import EngineClient, launch_from_args
from probe.session_store.snapshot import read_document, saved_session


def wait_for(client: EngineClient, predicate, timeout: float = 400.0, seen=None):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        event = client.poll(0.2)
        if event is not None and seen is not None:
            seen.append(event)
        if event is not None and predicate(event):
            return event
    raise AssertionError("timed out waiting for the engine")


@pytest.mark.slow
def test_the_side_engine_prewarms_while_the_old_serves_then_takes_over(tmp_path):
    args = argparse.Namespace(model="t5-tiny", trace="chat", device="cpu", opt=[], speed=8.0,
                              buckets="64,128", requests=None, max_input=128, max_output=8)
    launch = launch_from_args(args)
    launch = dataclasses.replace(launch, settings=dataclasses.replace(launch.settings,
                                                                      compile_backend="eager"))
    client = EngineClient(launch)
    client.start()
    try:
        first = wait_for(client, lambda e: isinstance(e, protocol.EngineLive) and e.view.recent).view
        since = first.t_s
        wanted = OptConfig(compile="default", bucketing="on", decode="fullgraph")
        client.warm_switch(wanted)
        seen: list = []
        ready = wait_for(client, lambda e: isinstance(e, (WarmReady, WarmFailed)), seen=seen)
        assert isinstance(ready, WarmReady) and ready.shapes == 2
        lives = [e.view for e in seen if isinstance(e, protocol.EngineLive)]
        assert lives and all(v.options == OptConfig() for v in lives)   # served on, eager
        last_old = lives[-1]
        served_during = [r for r in last_old.recent if r.start_s >= since]
        assert served_during and all(r.compile_stall_ms == 0 for r in served_during)
        cost = side_compile_cost(last_old.recent, last_old.config_id, since, last_old.t_s)
        print(f"side compile {ready.seconds:.1f} s; "
              f"{cost.text() if cost else 'no cost measured'}")
        client.cut_over()
        after = wait_for(client, lambda e: isinstance(e, protocol.EngineLive) and any(
            r.config_id != last_old.config_id
            for r in e.view.recent if r.ok)).view
        new = [r for r in after.recent if r.config_id == after.config_id]
        assert after.options.compile == "default" and new
        assert all(r.compile_stall_ms == 0 for r in new)
        assert after.t_s > last_old.t_s                         # the same session clock
        # the same session: what the old config served is kept (counted by its segment;
        # `recent` is a window, which a loaded machine scrolls past before the cut-over)
        def served(view, config_id):
            return sum(s.requests for s in view.segments if s.config_id == config_id)
        assert served(after, last_old.config_id) >= served(last_old, last_old.config_id) > 0
        saved = tmp_path / "session.json"
        client.send(protocol.SaveSnapshot(str(saved)))
        wait_for(client, lambda e: isinstance(e, (protocol.SnapshotSaved,
                                                  protocol.SnapshotFailed)))
    finally:
        client.stop()
    # issue 49: the segment said "compiles 0 … graphs 0" while the ledger held the graphs
    data = saved_session(read_document(str(saved)))
    segment = {s.config_id: s for s in session_segments(data)}[after.config_id]
    ledger = [e for e in data.compile_ledger if e.config_id == after.config_id and e.compile_s]
    assert segment.compiles + segment.recompiles == len(ledger) > 0
    assert segment.graphs == len(ledger)
    assert abs(segment.compile_s - sum(e.compile_s for e in ledger)) < 1e-6
    side = side_compiles(data, after.config_id)
    assert side is not None and side.beside == last_old.config_id
    assert side.since_s >= since - 1.0 and side.until_s <= after.t_s
    said = [n.text for n in data.notices if "cut over" in n.text]
    assert said and side.text() in said[-1]
