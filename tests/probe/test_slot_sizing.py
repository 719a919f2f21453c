"""Continuous batching's slots from a given free-memory figure, the flags that override it, and
the ladder of batch sizes that get a CUDA graph."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from probe.common.errors import BadInput
from probe.engine.decode.slot_graphs import ladder, rows_for
from probe.engine.decode.slot_sizing import MAX_SLOTS, SHARE_OF_FREE, size_slots

GiB = 2**30
# t5-small in fp32: 2 (K, V) · 6 layers · 8 heads · 64 d_kv · 4 bytes a position
T5_SMALL_POSITION = 2 * 6 * 8 * 64 * 4


def h200(**flags):
    return size_slots(device_type="cuda", free_bytes=138 * GiB, position_bytes=T5_SMALL_POSITION,
                      max_input_tokens=512, max_new_tokens=512, **flags)


def test_a_gpu_with_room_gets_the_cap_not_eight():
    sizing = h200()
    assert sizing.slots == MAX_SLOTS["cuda"] == 256
    assert sizing.region_bytes == T5_SMALL_POSITION * 1024       # 24 MiB a slot
    assert sizing.held_bytes <= 138 * GiB * SHARE_OF_FREE
    assert "at most 256" in sizing.source


def test_a_small_free_figure_gets_what_half_of_it_holds():
    free = 1 * GiB
    sizing = size_slots(device_type="cuda", free_bytes=free, position_bytes=T5_SMALL_POSITION,
                        max_input_tokens=512, max_new_tokens=512)
    assert sizing.slots == int(free * SHARE_OF_FREE) // (T5_SMALL_POSITION * 1024) == 21


def test_the_trace_lengths_size_the_region():
    short = size_slots(device_type="cuda", free_bytes=2 * GiB, position_bytes=T5_SMALL_POSITION,
                       max_input_tokens=128, max_new_tokens=64)
    assert short.region_bytes == T5_SMALL_POSITION * 192
    assert short.slots == min(256, GiB // short.region_bytes)


def test_a_cpu_keeps_eight_and_the_flags_override():
    cpu = size_slots(device_type="cpu", free_bytes=None, position_bytes=T5_SMALL_POSITION,
                     max_input_tokens=512, max_new_tokens=512)
    assert cpu.slots == 8 and cpu.budget_bytes is None
    assert h200(max_batch=48).slots == 48
    budget = h200(kv_budget_bytes=1 * GiB)
    assert budget.slots == GiB // (T5_SMALL_POSITION * 1024) == 42
    assert budget.budget_bytes == GiB


def test_flags_the_device_cannot_hold_are_refused_in_one_line():
    with pytest.raises(BadInput, match=r"--max-batch 9000: .* GiB free; at most 5888 slots"):
        h200(max_batch=9000)
    with pytest.raises(BadInput, match=r"--kv-budget 200.0 GiB: the device has 138.0 GiB free"):
        h200(kv_budget_bytes=200 * GiB)


@given(free=st.integers(0, 2**42), position=st.integers(1, 2**16),
       max_input=st.integers(1, 4096), max_new=st.integers(1, 4096))
def test_sizing_never_exceeds_half_the_free_memory_or_the_cap(free, position, max_input,
                                                              max_new):
    sizing = size_slots(device_type="cuda", free_bytes=free, position_bytes=position,
                        max_input_tokens=max_input, max_new_tokens=max_new)
    assert 1 <= sizing.slots <= MAX_SLOTS["cuda"]
    assert sizing.slots == 1 or sizing.held_bytes <= free * SHARE_OF_FREE


def test_the_ladder_doubles_up_to_the_slots():
    assert ladder(1) == (1,)
    assert ladder(8) == (1, 2, 4, 8)
    assert ladder(256) == (1, 2, 4, 8, 16, 32, 64, 128, 256)
    assert ladder(100) == (1, 2, 4, 8, 16, 32, 64, 100)


@given(slots=st.integers(1, 4096), data=st.data())
def test_a_step_runs_over_the_smallest_captured_size_that_holds_its_slots(slots, data):
    sizes = ladder(slots)
    highest = data.draw(st.integers(0, slots - 1))
    rows = rows_for(highest, sizes)
    assert rows in sizes and rows > highest
    assert all(size <= highest for size in sizes if size < rows)
