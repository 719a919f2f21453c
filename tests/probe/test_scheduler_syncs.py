"""The continuous-batching loop's host work does not grow with its slots: tokens leave the
device only for the requests that are done (their own tokens, once), and the host waits for
the device at most once a step, on a step several behind. Driven with a fake device clock whose
marks pass only when later steps have been queued, so a loop that waited on every step or read
every slot back would show it in the counts."""

from __future__ import annotations

import pytest
import torch

from probe.contract.options import parse_opts
from probe.engine.continuous_scheduler import STEPS_AHEAD, ContinuousScheduler
from probe.engine.decode.device_timeline import Fetch, HostMark, Timeline
from probe.engine.engine import Engine, EngineSettings
from probe.engine.model.requests import EngineRequest
from tests.conftest import varied_tiny_model


class LaggingMark(HostMark):
    pass


class LaggingTimeline(Timeline):
    """A GPU `lag` steps behind the host: a mark passes once `lag` newer marks exist."""

    def __init__(self, lag: int) -> None:
        super().__init__()
        self.lag, self.made = lag, 0
        self.marks: list[tuple[int, object]] = []
        self.fetched: list[int] = []           # the length of each read back
        self._forced: set[int] = set()

    def mark(self):
        self.made += 1
        mark = _Mark(self, self.made)
        return mark

    def wait(self, mark) -> None:
        if not mark.ready():
            self.waits += 1
            self._forced.add(mark.number)

    def seconds(self, mark) -> float:
        self.wait(mark)
        return float(mark.number)

    def fetch(self, values: torch.Tensor) -> Fetch:
        self.fetched.append(values.numel())
        return Fetch(values.clone(), self.mark())


class _Mark:
    def __init__(self, timeline: LaggingTimeline, number: int) -> None:
        self.timeline, self.number = timeline, number

    def ready(self) -> bool:
        t = self.timeline
        return self.number in t._forced or t.made - self.number >= t.lag


@pytest.fixture(scope="module")
def engine():
    settings = EngineSettings(model="t5-tiny", device="cpu", max_new_tokens=16,
                              max_input_tokens=16, compile_backend="eager", keep_tokens=True,
                              max_batch=6)
    built = Engine(settings, parse_opts(["batching=continuous"]), loaded=varied_tiny_model())
    yield built
    built.close()


def test_only_finished_requests_are_read_back_and_the_host_runs_ahead(engine):
    outputs = [3, 16, 7, 1, 12, 5, 9, 16, 2, 4]
    requests = [EngineRequest(f"s{i}", 500 + i, 4 + i, out, 0.0)
                for i, out in enumerate(outputs)]
    alone = {r.id: list(engine.serve([r])[0].tokens) for r in requests}
    scheduler = ContinuousScheduler(engine)
    timeline = scheduler.timeline = LaggingTimeline(lag=STEPS_AHEAD + 3)
    records = scheduler.serve_all(requests)
    steps = scheduler.steps
    assert sorted(r.id for r in records) == sorted(alone)
    assert all(list(r.tokens) == alone[r.id] for r in records)
    # one read per request, of its own tokens: never a slot's row per step
    assert sorted(timeline.fetched) == sorted(outputs)
    # the host waited on at most one mark a step, never on the step it just queued
    assert timeline.waits <= steps
    assert steps > max(outputs)          # the slots were shared: a real batching run


def test_a_record_keeps_its_own_times_when_the_host_ran_ahead(engine):
    """First token, last token and end come from the marks of its own steps, not from when the
    host happened to read them."""
    scheduler = ContinuousScheduler(engine)
    scheduler.timeline = LaggingTimeline(lag=3)
    request = EngineRequest("t0", 900, 5, 6, 0.0)
    records = scheduler.join([request])
    while scheduler.active:
        records += scheduler.step()
    (record,) = records
    assert record.ok and len(record.tokens) == 6
    assert record.first_token_s < record.end_s
    # the fake clock's marks are numbered: the encoder's, then one per step, each a "second"
    # apart, so its 6 tokens came 1 s apart whenever the host read them
    assert record.end_s - record.first_token_s == pytest.approx(5.0)
    assert record.tpot_ms == pytest.approx(1000.0)


class EagerGraphs:
    """SlotGraphs's interface on a CPU: `replay(rows)` runs the step it would have captured
    over the first `rows` slots (the same views of the batcher's tensors)."""

    def __init__(self, sizes, step_for, device) -> None:
        self.sizes, self.captures = sizes, []
        self._steps = {rows: step_for(rows) for rows in sizes}
        self.replayed: list[int] = []

    def replay(self, rows: int) -> None:
        self.replayed.append(rows)
        self._steps[rows]()


def test_steps_over_the_captured_sizes_keep_every_token(engine, monkeypatch):
    """The graph of the smallest size holding the occupied slots runs over views of the first
    rows: a request's tokens are those it gets alone, whatever the size each step ran at."""
    import probe.engine.decode.continuous as continuous
    from probe.engine.decode.continuous import SlotBatcher

    monkeypatch.setattr(continuous, "SlotGraphs", EagerGraphs)
    options = engine.options
    board = engine.switchboard
    batcher = SlotBatcher(board.model_for(options), slots=6, max_new_tokens=16,
                          max_input_tokens=16, wrap=lambda fn: fn, graphs=True)
    monkeypatch.setitem(board._slot_batchers, options, batcher)
    outputs = [5, 2, 9, 1, 3, 7, 4]
    requests = [EngineRequest(f"g{i}", 700 + i, 3 + i, out, 0.0) for i, out in enumerate(outputs)]
    alone = {r.id: list(engine.serve([r])[0].tokens) for r in requests}
    scheduler = ContinuousScheduler(engine)
    records = scheduler.serve_all(requests, per_join=2)     # a few at a time
    assert {r.id: list(r.tokens) for r in records} == alone
    replayed = batcher.graphs.replayed
    assert set(replayed) <= set(batcher.graphs.sizes) and min(replayed) < 6


def test_joins_wait_for_a_group_of_free_slots_while_requests_run():
    """Each join runs the encoder: with 32 slots a join waits for 2 free ones unless nothing
    runs, and every request is still served."""
    import threading

    from probe.engine.serving import ServingLoop
    from workloads.replayer import ClosedLoopReplayer
    from workloads.trace_records import Trace, TraceRequest

    settings = EngineSettings(model="t5-tiny", device="cpu", max_new_tokens=8,
                              max_input_tokens=16, compile_backend="eager", max_batch=32,
                              drift_every=0)
    engine = Engine(settings, parse_opts(["batching=continuous"]), loaded=varied_tiny_model())
    trace = Trace("mix", tuple(TraceRequest(i * 1.0, 3 + i % 9, 1 + (i * 5) % 8, id=f"m{i}")
                               for i in range(120)))
    loop = ServingLoop(engine, ClosedLoopReplayer(trace, concurrency=64))
    batcher = engine.switchboard.slot_batcher(engine.options, engine.settings)
    joins: list[tuple[int, int]] = []         # (joiners, slots held before)
    real_join = batcher.join

    def counted(slot_ids, *args, **kwargs):
        joins.append((len(slot_ids), len(batcher.occupied_slots)))
        return real_join(slot_ids, *args, **kwargs)
    batcher.join = counted
    loop.run(threading.Event())
    engine.close()
    assert (loop.completed, loop.failed) == (120, 0)
    assert all(joiners >= 2 or held == 0 for joiners, held in joins), joins
    assert len(joins) < 120 / 2


def test_dynamic_batches_under_graphs_are_padded_to_the_ladder(engine, monkeypatch):
    """Three requests ride in a batch of 4 (the ladder's size): one graph per size, not one per
    batch size that occurs; the padding row's tokens are dropped, the others' are their own."""
    import probe.engine.engine as engine_module

    requests = [EngineRequest(f"d{i}", 800 + i, 4 + 2 * i, 3 + i, 0.0) for i in range(3)]
    alone = {r.id: list(engine.serve([r])[0].tokens) for r in requests}
    shapes: list[int] = []
    real_pad = engine_module.pad_batch

    def spied(rows, *args):
        shapes.append(len(rows))
        return real_pad(rows, *args)
    monkeypatch.setattr(engine_module, "pad_batch", spied)
    monkeypatch.setattr(engine.switchboard, "pads_batches", lambda options: True)
    records = engine.serve(requests)
    assert shapes == [4]
    assert [r.id for r in records] == [r.id for r in requests]
    assert {r.id: list(r.tokens) for r in records} == alone


def test_a_joins_host_time_is_the_loops(engine, monkeypatch):
    """The join's encoder run is host work of the loop: the steps' figure holds it (a join
    made slow by 20 ms shows as at least 20 ms of joins over the steps of the window)."""
    import time as time_module

    scheduler = ContinuousScheduler(engine)
    batcher = scheduler.batcher
    real_join = batcher.join

    def slow_join(*args, **kwargs):
        time_module.sleep(0.02)
        return real_join(*args, **kwargs)
    monkeypatch.setattr(batcher, "join", slow_join)
    requests = [EngineRequest(f"j{i}", 950 + i, 4, 3, 0.0) for i in range(4)]
    scheduler.serve_all(requests, per_join=2)
    figure = engine.session.freeze().batch_steps[engine.config_id]
    assert figure.join_ms is not None and figure.host_ms is not None
    assert figure.join_ms * scheduler.steps >= 2 * 20.0     # two joins of 2, 20 ms each
    assert figure.host_ms > figure.join_ms
