"""replay_at without an engine, for tune's tests: each of the `requests` served at a latency the
test sets from the options and the rate, the session saved where tune asks."""

from __future__ import annotations

from typing import Callable

from probe.common.atomic import write_json_atomic
from probe.contract.options import OptConfig
from probe.contract.session import Session
from probe.session_store.snapshot import snapshot_document
from tests.conftest import synthetic_record


def fake_replay_at(latency_ms: Callable[[OptConfig, float], float],
                   on_call: Callable[[OptConfig], None] = lambda options: None):
    def replay_at(context, options, workload, *, rate, requests, trace_name, save_to=None,
                  stop=None, warm=2, max_batch=8, batch_window_ms=None):
        on_call(options)
        session = Session()
        session.set_slo(context.slo)
        config = session.config_id(options)
        for i in range(requests):
            session.add_record(synthetic_record(f"r{i}", i, latency_ms=latency_ms(options, rate),
                                                config_id=config))
        data = session.freeze()
        if save_to is not None:
            write_json_atomic(save_to, snapshot_document(data, environment={}, model={},
                                                         trace={}))
        return data
    return replay_at
