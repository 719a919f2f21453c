"""Giving up a compile on a real t5-tiny engine (what the dashboard's `x` does): ask for the
previous options, restart the engine process; it serves them again and the session goes on."""

from __future__ import annotations

import pytest

from probe.contract import protocol
from probe.contract.options import OptConfig
from probe.engine.process.engine_process import EngineClient
from tests.probe.test_engine_process import config, wait_for


@pytest.mark.slow
def test_a_compile_given_up_serves_the_previous_config_and_continues_the_session():
    client = EngineClient(config(speed=20.0))
    client.start()
    try:
        before = wait_for(client, lambda e: isinstance(e, protocol.EngineLive)
                          and len(e.view.recent) >= 3).view
        client.send(protocol.SetOptions(OptConfig(compile="default")))
        compiling = wait_for(client, lambda e: isinstance(e, protocol.EngineLive)
                             and e.view.compiling is not None).view
        assert compiling.config_id != before.config_id
        served = max(r.seq for r in compiling.recent)

        client.send(protocol.SetOptions(before.options))     # what `x` sends, then restarts
        client.restart(compiling.compiling)
        after = wait_for(client, lambda e: isinstance(e, protocol.EngineLive) and any(
            r.seq > served and r.config_id != compiling.config_id and r.ok
            for r in e.view.recent)).view
    finally:
        client.stop()
    # issue 38: nothing the engine held is lost; the compile given up is its own event
    assert not [r for r in after.recent if r.error and r.error.startswith("lost")]
    (abandoned,) = [e for e in after.compile_events if e.kind == "abandoned"]
    assert abandoned.compile_id == compiling.compiling.compile_id
    counted = {s.config_id: s for s in after.segments}
    given_up = counted.get(abandoned.config_id)
    assert given_up is None or given_up.compile_s < (abandoned.duration_s or 0) + 1e-9 \
        or all(e.kind != "abandoned" for e in after.compile_events
               if e.config_id == abandoned.config_id and e.kind in ("compile", "recompile"))
    # issue 49: the return to the eager config is a segment of its own; the one left keeps
    # its figures as they were when the user left it
    assert after.options == before.options
    assert after.config_id not in (before.config_id, compiling.config_id)
    left = {s.config_id: s for s in compiling.segments}[before.config_id]
    assert {s.config_id: s for s in after.segments}[before.config_id] == left
    assert after.compiling is None
    assert after.t_s > compiling.t_s                          # the same session clock
    assert {r.id for r in before.recent} <= {r.id for r in after.recent}
