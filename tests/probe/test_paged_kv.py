"""The paged KV layout: blocks never double-allocated, tokens identical to the static layout,
requests wait for blocks instead of failing, one compiled graph with zero breaks."""

from __future__ import annotations

from collections import deque

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from probe.analysis.stats import session_segments
from probe.contract.options import parse_opts
from probe.engine.continuous_scheduler import ContinuousScheduler
from probe.engine.decode.paged import BlockAllocator
from probe.engine.engine import Engine, EngineSettings
from probe.engine.model.requests import EngineRequest
from tests.conftest import varied_tiny_model

MAX_NEW, MAX_INPUT, BLOCK = 12, 24, 4


@given(ops=st.lists(st.tuples(st.sampled_from(["admit", "grow", "leave"]), st.integers(0, 9),
                              st.integers(1, 6)), max_size=60),
       total=st.integers(1, 40))
def test_the_allocator_never_hands_out_a_block_twice(ops, total):
    pool = BlockAllocator(total)
    holders: dict[int, tuple[list[int], int]] = {}     # id → (blocks, still reserved)
    for op, who, size in ops:
        if op == "admit" and who not in holders and pool.reserve(size):
            holders[who] = ([pool.take()], size - 1)
        elif op == "grow" and who in holders and holders[who][1] > 0:
            blocks, left = holders[who]
            holders[who] = (blocks + [pool.take()], left - 1)
        elif op == "leave" and who in holders:
            blocks, left = holders.pop(who)
            pool.release(blocks, unreserve=left)
        held = [b for blocks, _ in holders.values() for b in blocks]
        assert len(held) == len(set(held)) and 0 not in held
        assert pool.used == len(held) and pool.free + pool.used == total
        assert pool.available >= 0


def engine_for(*opts: str, slots: int = 4, budget_blocks: int | None = None) -> Engine:
    loaded = varied_tiny_model()
    config = loaded.model.config
    block_bytes = 2 * config.num_decoder_layers * config.num_heads * BLOCK * config.d_kv * 4
    settings = EngineSettings(model="t5-tiny", device="cpu", max_new_tokens=MAX_NEW,
                              max_input_tokens=MAX_INPUT, compile_backend="eager",
                              keep_tokens=True, max_batch=slots, kv_block_tokens=BLOCK,
                              kv_budget_bytes=budget_blocks and budget_blocks * block_bytes)
    return Engine(settings, parse_opts(opts), loaded=loaded)


@pytest.fixture(scope="module")
def engines():
    built = {"static": engine_for("batching=continuous"),
             "paged": engine_for("batching=continuous", "kv_layout=paged"),
             "tight": engine_for("batching=continuous", "kv_layout=paged", budget_blocks=14)}
    yield built
    for engine in built.values():
        engine.close()


def drive(engine: Engine, shapes: list[tuple[int, int, int]], first_seq: int):
    """(gap in steps, input length, output length) arrivals through one scheduler."""
    scheduler = ContinuousScheduler(engine)
    planned, step = deque(), 0
    for i, (gap, n, out) in enumerate(shapes):
        step += gap
        planned.append((step, EngineRequest(f"q{first_seq + i}", first_seq + i, n, out, 0.0)))
    records, step, most = [], 0, 0
    while planned or scheduler.active or scheduler.waiting:
        arrived = []
        while planned and planned[0][0] <= step:
            arrived.append(planned.popleft()[1])
        if arrived or scheduler.waiting:
            records += scheduler.join(arrived)
        most = max(most, scheduler.active)
        if scheduler.active:
            records += scheduler.step()
            assert_window_covers_the_held_blocks(scheduler.batcher)
        step += 1
    return records, most


def assert_window_covers_the_held_blocks(batcher) -> None:
    """The blocks the step attended over hold every block a running request holds, and the
    keys and values kept from earlier steps are what the pool holds now: cross-attention's
    over each request's own blocks, self-attention's over every position it has written."""
    if batcher.layout != "paged":
        return
    window = batcher.window
    own, cross = window.self_table.shape[1], window.cross_table.shape[1]
    for held in batcher._held.values():
        assert len(held.self_blocks) <= own and len(held.cross_blocks) <= cross
    # (only each request's own positions: the null block past them is written by free slots'
    # steps, and the masks hide it)
    gather = batcher.pool.gather_layers
    written = batcher.positions.tolist()
    for kept, pool, table, filled in (
            (window.cross_keys, batcher.pool.keys, window.cross_table, None),
            (window.cross_values, batcher.pool.values, window.cross_table, None),
            (window.self_keys, batcher.pool.keys, window.self_table, written),
            (window.self_values, batcher.pool.values, window.self_table, written)):
        fresh = gather(pool, table)
        for layer in range(batcher.dims.layers):
            for slot, held in batcher._held.items():
                real = (len(held.cross_blocks) * batcher.block_tokens if filled is None
                        else filled[slot])
                assert torch.equal(kept[layer][slot, :, :real], fresh[layer][slot, :, :real])


shapes = st.lists(st.tuples(st.integers(0, 2 * MAX_NEW), st.integers(1, MAX_INPUT),
                            st.integers(1, MAX_NEW)), min_size=1, max_size=10)
_seq = iter(range(1, 10**6))


@settings(max_examples=20, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(arrivals=shapes)
def test_paged_tokens_equal_static_tokens_even_when_requests_wait_for_blocks(engines, arrivals):
    first = next(_seq) * 100
    static, _ = drive(engines["static"], arrivals, first)
    for name in ("paged", "tight"):
        paged, _ = drive(engines[name], arrivals, first)
        assert [r.error for r in paged if not r.ok] == []
        assert {r.id: r.tokens for r in paged} == {r.id: r.tokens for r in static}
        for record in paged:       # held: whole blocks of its own; used: what it filled
            assert record.kv_cache_bytes >= record.kv_cache_used_bytes > 0


def test_a_tight_pool_makes_requests_wait_and_frees_blocks_on_leaving():
    engine = engine_for("batching=continuous", "kv_layout=paged", budget_blocks=14)
    try:
        burst = [(0, 20, MAX_NEW)] * 6    # each needs 5 cross + 3 self blocks of 4 positions
        records, most = drive(engine, burst, 9000)
        assert all(r.ok for r in records) and len(records) == 6
        assert most == 1                  # 14 blocks hold one such request at a time
        batcher = engine.switchboard.slot_batcher(engine.options, engine.settings)
        assert batcher.allocator.used == 0 and batcher.allocator.available == 14
        pool = session_segments(engine.session.freeze())[0].kv_pool
        assert (pool.layout, pool.blocks_total, pool.blocks_peak, pool.block_tokens) == (
            "paged", 14, 8, BLOCK)
        # held: its 8 blocks; used: 20 encoder + 12 own positions of the 32 they hold
        assert {r.kv_cache_bytes for r in records} == {8 * pool.block_bytes}
        assert {r.kv_cache_used_bytes for r in records} == {8 * pool.block_bytes}
    finally:
        engine.close()


def test_a_request_bigger_than_the_pool_fails_with_its_reason():
    engine = engine_for("batching=continuous", "kv_layout=paged", budget_blocks=6)
    try:    # 6 cross + 3 self blocks can never fit in 6; 2 + 1 can
        records, _ = drive(engine, [(0, MAX_INPUT, MAX_NEW), (0, 5, 3)], 9100)
        failed = [r for r in records if not r.ok]
        assert len(failed) == 1 and "6 blocks in the pool" in failed[0].error
        assert sum(r.ok for r in records) == 1
    finally:
        engine.close()


def record_widths(batcher) -> list[int]:
    """Every width the batcher's steps attend at from now on, in order."""
    widths: list[int] = []
    choose = batcher._set_window

    def recording(needed: int) -> int:
        widths.append(choose(needed))
        return widths[-1]
    batcher._set_window = recording
    return widths


# a short input growing past 1, 2 then 3 self blocks; a long one joining mid-batch (6 cross
# blocks: the whole table) and leaving three steps later
GROWING = [(0, 3, MAX_NEW), (5, 22, 3)]


def test_tokens_stay_the_static_tokens_as_the_width_grows_and_shrinks_mid_batch(engines):
    batcher = engines["paged"].switchboard.slot_batcher(engines["paged"].options,
                                                        engines["paged"].settings)
    assert batcher.widths == (1, 2, 3, 6)        # ladder over max(12 / 4, 24 / 4) blocks
    widths = record_widths(batcher)
    try:
        paged, _ = drive(engines["paged"], GROWING, 7000)
    finally:
        del batcher._set_window                      # the class's own again
    static, _ = drive(engines["static"], GROWING, 7000)
    assert all(r.ok for r in paged)
    assert {r.id: r.tokens for r in paged} == {r.id: r.tokens for r in static}
    # the first request alone: 1 then 2 blocks; the long one joins (6), leaves (back to 3)
    assert widths[:5] == [1, 1, 1, 1, 2] and 6 in widths and widths[-1] == 3
    first_wide = widths.index(6)
    assert widths[first_wide:first_wide + 3] == [6, 6, 6] and widths[first_wide + 3] < 6


# at one width throughout (3 blocks: every input ≤ 12, every output ≤ 12), so only the joins make
# the kept cross-attention window stale: B joins beside A, A leaves, C joins into A's blocks
SAME_WIDTH = [(0, 10, 6), (2, 9, 12), (6, 11, 8)]


def test_cross_blocks_are_gathered_again_when_a_request_joins_at_the_same_width(engines):
    engine = engines["tight"]
    batcher = engine.switchboard.slot_batcher(engine.options, engine.settings)
    widths = record_widths(batcher)
    try:
        paged, _ = drive(engine, SAME_WIDTH, 7300)
    finally:
        del batcher._set_window
    static, _ = drive(engines["static"], SAME_WIDTH, 7300)
    assert set(widths) == {3}
    assert all(r.ok for r in paged) and len(paged) == 3
    assert by_arrival(paged, 7300) == by_arrival(static, 7300)


def test_freed_blocks_are_taken_again_and_decode_the_same_tokens(engines):
    engine = engines["tight"]
    batcher = engine.switchboard.slot_batcher(engine.options, engine.settings)
    taken: list[int] = []
    take = batcher.allocator.take

    def recording() -> int:
        taken.append(take())
        return taken[-1]
    batcher.allocator.take = recording            # type: ignore[method-assign]
    try:
        wave = [(0, 20, MAX_NEW), (0, 9, 5)]
        first, _ = drive(engine, wave, 7100)
        assert all(r.ok for r in first) and taken and batcher.allocator.used == 0
        first_blocks, taken[:] = set(taken), []
        second, _ = drive(engine, wave, 7200)
        assert batcher.allocator.used == 0 and first_blocks & set(taken)
    finally:
        del batcher.allocator.take
    for records, seq in ((first, 7100), (second, 7200)):       # a request's ids follow its seq
        static, _ = drive(engines["static"], wave, seq)
        assert by_arrival(records, seq) == by_arrival(static, seq)


def by_arrival(records, first_seq: int) -> dict[int, list[int]]:
    return {int(r.id[1:]) - first_seq: r.tokens for r in records}


@pytest.mark.slow
def test_paged_step_compiles_once_per_width_without_breaks():
    engine = engine_for("batching=continuous", "kv_layout=paged", "compile=default")
    try:
        batcher = engine.switchboard.slot_batcher(engine.options, engine.settings)
        arrivals = [(0, 9, 6), (1, 13, 4), (0, 5, 9)] + GROWING
        records, _ = drive(engine, arrivals, 0)
        assert all(r.ok for r in records)
        data = engine.session.freeze()
        steps = [e for e in data.events if e.function == "slot_step"]
        assert len(batcher.widths_used) > 1            # the width moved
        assert len(steps) == len(batcher.widths_used) <= len(batcher.widths)
        assert steps[0].kind == "compile" and data.breaks == ()
        again, _ = drive(engine, arrivals, 0)          # the same widths: nothing compiles
        assert by_arrival(again, 0) == by_arrival(records, 0)
        assert len([e for e in engine.session.freeze().events
                    if e.function == "slot_step"]) == len(steps)
    finally:
        engine.close()


def test_paged_wastes_less_kv_than_static_regions(engines):
    arrivals = [(i % 3, 8 + (7 * i) % 17, 3 + (5 * i) % 10) for i in range(12)]
    waste = {}
    for layout in ("static", "paged"):
        engine = engines[layout]
        before = len(engine.session.freeze().records)
        records, _ = drive(engine, arrivals, 9500)
        assert all(r.ok for r in records)
        held = np.array([r.kv_cache_bytes for r in records], dtype=float)
        used = np.array([r.kv_cache_used_bytes for r in records], dtype=float)
        waste[layout] = 100 * (held.sum() - used.sum()) / held.sum()
        segment = session_segments(engine.session.freeze())[0]
        every = [r for r in engine.session.freeze().records if r.ok]
        all_held = sum(r.kv_cache_bytes for r in every)
        all_used = sum(r.kv_cache_used_bytes for r in every)
        assert segment.kv_waste_pct == pytest.approx(100 * (all_held - all_used) / all_held)
        assert before < len(every)
    assert waste["paged"] < waste["static"] / 2
