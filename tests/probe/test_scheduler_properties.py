"""Batching never fails because of time, and never changes a token (fp32, greedy, no compile).

The schedulers are driven step by step from a generated arrival plan, so "a gap longer than the
static cache" is exact (a slot stays free while others take more steps than the cache has
positions) and each example runs in well under a second.
"""

from __future__ import annotations

import threading
from collections import deque
from dataclasses import dataclass

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from probe.contract.options import parse_opts
from probe.engine.continuous_scheduler import ContinuousScheduler
from probe.engine.engine import Engine, EngineSettings
from probe.engine.model.requests import EngineRequest
from probe.engine.serving import ServingLoop
from tests.conftest import varied_tiny_model
from workloads.replayer import OpenLoopReplayer
from workloads.trace_records import Trace, TraceRequest

MAX_NEW_TOKENS = 12
MAX_INPUT = 24


@dataclass(frozen=True)
class Arrival:
    gap_steps: int          # decode steps since the previous arrival
    input_length: int
    output_length: int


arrivals = st.lists(
    st.builds(Arrival,
              gap_steps=st.integers(0, 3 * MAX_NEW_TOKENS),   # often longer than the cache
              input_length=st.integers(1, MAX_INPUT),
              output_length=st.integers(1, MAX_NEW_TOKENS)),
    min_size=1, max_size=10)


class Engines:
    """One engine per configuration for the whole module: building one costs far more than an
    example, and the schedulers must be reusable across runs anyway."""

    def __init__(self) -> None:
        self._engines: dict[tuple, Engine] = {}
        self._reference: dict[tuple[int, int, int], list[int]] = {}

    def get(self, *opts: str, slots: int = 8) -> Engine:
        key = (opts, slots)
        if key not in self._engines:
            settings = EngineSettings(model="t5-tiny", device="cpu", max_new_tokens=MAX_NEW_TOKENS,
                                      max_input_tokens=MAX_INPUT, compile_backend="eager",
                                      keep_tokens=True, max_batch=slots)
            self._engines[key] = Engine(settings, parse_opts(opts), loaded=varied_tiny_model())
        return self._engines[key]

    def alone(self, request: EngineRequest) -> list[int]:
        """The request's tokens served by itself (the reference every batching must equal)."""
        key = (request.seq, request.input_length, request.output_length)
        if key not in self._reference:
            engine = self.get("decode=fullgraph")
            record = engine.serve([request])[0]
            assert record.ok, record.error
            self._reference[key] = list(record.tokens)
        return self._reference[key]

    def close(self) -> None:
        for engine in self._engines.values():
            engine.close()


@pytest.fixture(scope="module")
def engines():
    pool = Engines()
    yield pool
    pool.close()


def plan(engine: Engine, items: list[Arrival], first_seq: int) -> list[tuple[int, EngineRequest]]:
    """(arrival step, request) for each arrival."""
    step, planned = 0, []
    for i, item in enumerate(items):
        step += item.gap_steps
        planned.append((step, EngineRequest(
            id=f"p{first_seq + i}", seq=first_seq + i, input_length=item.input_length,
            output_length=item.output_length, arrival_s=engine.clock.now_s())))
    return planned


_seq = iter(range(10**9))


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(items=arrivals, slots=st.integers(1, 8))
def test_continuous_serves_everything_with_the_tokens_it_gets_alone(engines, items, slots):
    engine = engines.get("batching=continuous", slots=slots)
    planned = plan(engine, items, next(_seq) * 100)
    waiting = deque(planned)
    scheduler = ContinuousScheduler(engine)
    records, step = [], 0
    while waiting or scheduler.active:
        joiners = []
        while waiting and waiting[0][0] <= step and len(joiners) < scheduler.free_slots:
            joiners.append(waiting.popleft()[1])
        if joiners:
            records += scheduler.join(joiners)
        if scheduler.active:
            records += scheduler.step()
        step += 1
    assert len(records) == len(items)
    assert [r.error for r in records if not r.ok] == []
    by_id = {r.id: r for r in records}
    for _, request in planned:
        assert list(by_id[request.id].tokens) == engines.alone(request)


@settings(max_examples=20, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(items=arrivals, batch=st.integers(1, 8),
       decode=st.sampled_from(["fullgraph", "hf-generate"]))
def test_dynamic_batches_of_any_mix_keep_every_token(engines, items, batch, decode):
    engine = engines.get("batching=dynamic", f"decode={decode}")
    requests = [request for _, request in plan(engine, items, next(_seq) * 100)]
    records = []
    for start in range(0, len(requests), batch):
        records += engine.serve(requests[start:start + batch])
    assert [r.error for r in records if not r.ok] == []
    for request, record in zip(requests, records):
        assert list(record.tokens) == engines.alone(request)
        # its own last token, never after the batch's end; TPOT from its own tokens
        assert record.first_token_s <= record.last_token_s <= record.end_s


def test_continuous_survives_idle_gaps_in_real_time(engines):
    """The reported failure: one request every 300–500 ms, outputs up to the cache's length,
    so slots sit free for many steps. Every request must be served, through the real loop."""
    engine = engines.get("batching=continuous", slots=4)
    gaps = [0.0, 0.3, 0.45, 0.35, 0.5, 0.3, 0.4, 0.5]
    outputs = [MAX_NEW_TOKENS, 5, MAX_NEW_TOKENS, 3, 9, MAX_NEW_TOKENS, 1, 7]
    times = [sum(gaps[:i + 1]) for i in range(len(gaps))]
    trace = Trace("gaps", tuple(TraceRequest(t * 1000.0, 4 + 2 * i, out, id=f"g{i}")
                                for i, (t, out) in enumerate(zip(times, outputs))))
    before = len(engine.session.freeze().records)
    loop = ServingLoop(engine, OpenLoopReplayer(trace, speed=1.0))
    loop.run(threading.Event())
    records = engine.session.freeze().records[before:]
    assert (loop.completed, loop.failed) == (len(gaps), 0)
    assert all(r.ok for r in records)


def test_a_failed_step_leaves_the_batcher_ready_for_the_next_join(engines, monkeypatch):
    engine = engines.get("batching=continuous", slots=2)
    scheduler = ContinuousScheduler(engine)
    first = plan(engine, [Arrival(0, 5, 4), Arrival(0, 6, 4)], next(_seq) * 100)
    scheduler.join([r for _, r in first])
    real_step = scheduler.batcher.step
    monkeypatch.setattr(scheduler.batcher, "step", lambda: (_ for _ in ()).throw(
        RuntimeError("injected fault")))
    failed = scheduler.step()
    assert [r.error for r in failed] == ["RuntimeError: injected fault"] * 2
    monkeypatch.setattr(scheduler.batcher, "step", real_step)
    second = plan(engine, [Arrival(0, 7, 6)], next(_seq) * 100)
    assert scheduler.join([r for _, r in second]) == []
    records = []
    while scheduler.active:
        records += scheduler.step()
    assert [list(r.tokens) for r in records] == [engines.alone(second[0][1])]


def test_a_request_longer_than_the_cache_fails_alone_with_its_reason(engines):
    engine = engines.get("batching=continuous", slots=2)
    scheduler = ContinuousScheduler(engine)
    ok, too_long = (r for _, r in plan(engine, [Arrival(0, 5, 3),
                                                 Arrival(0, 5, MAX_NEW_TOKENS + 1)],
                                        next(_seq) * 100))
    failed = scheduler.join([ok, too_long])
    assert [r.id for r in failed] == [too_long.id]
    assert "more than the KV cache holds" in failed[0].error
    records = []
    while scheduler.active:
        records += scheduler.step()
    assert [r.id for r in records] == [ok.id] and records[0].ok
