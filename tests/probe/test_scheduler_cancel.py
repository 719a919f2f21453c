"""A request nobody waits for (a client that left `infertop serve`) leaves its slot at the next
step: its KV blocks go back to the pool, its promise is given up, its record says why, and the
request beside it decodes on to the same tokens it makes alone."""

from __future__ import annotations

import pytest

from probe.contract.options import parse_opts
from probe.engine.continuous_scheduler import ContinuousScheduler
from probe.engine.decode.paged import PagedBatcher
from probe.engine.engine import Engine, EngineSettings
from probe.engine.model.requests import EngineRequest
from tests.conftest import varied_tiny_model


@pytest.fixture(scope="module")
def engine() -> Engine:
    settings = EngineSettings(model="t5-tiny", device="cpu", max_new_tokens=24,
                              max_input_tokens=32, max_batch=2, drift_every=0, keep_tokens=True,
                              kv_budget_bytes=1 << 20)
    return Engine(settings, parse_opts(["batching=continuous", "kv_layout=paged"]),
                  loaded=varied_tiny_model())


def _request(i: int, n_in: int) -> EngineRequest:
    return EngineRequest(id=f"q{i}", seq=i, input_length=n_in, output_length=20, arrival_s=0.0)


def test_a_cancelled_request_gives_its_blocks_back_and_the_other_decodes_on(engine):
    alone = ContinuousScheduler(engine).serve_all([_request(1, 20)])[0].tokens
    scheduler = ContinuousScheduler(engine)
    batcher = scheduler.batcher
    assert isinstance(batcher, PagedBatcher)
    free_before, open_before = batcher.allocator.available, batcher.allocator.free
    scheduler.join([_request(0, 30), _request(1, 20)])
    for _ in range(3):
        scheduler.step()
    partial = scheduler.tokens_so_far({"q0", "q1"})
    assert {k: len(v) for k, v in partial.items()} == {"q0": 3, "q1": 3}
    assert partial["q1"] == list(alone[:3])
    held, slots = batcher.allocator.available, scheduler.free_slots
    records = scheduler.cancel({"q0"}, "cancelled: test")
    assert [(r.id, r.error, r.ok) for r in records] == [("q0", "cancelled: test", False)]
    assert scheduler.free_slots == slots + 1 and batcher.allocator.available > held
    served = []
    while scheduler.active:
        served += scheduler.step()
    assert [r.id for r in served] == ["q1"] and served[0].tokens == alone
    assert (batcher.allocator.available, batcher.allocator.free) == (free_before, open_before)
    assert scheduler.cancel({"q9"}, "nobody") == []
