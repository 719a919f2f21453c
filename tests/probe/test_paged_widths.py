"""The paged step's attended width: whatever the active lengths, the width chosen holds every
one of them, is one of a few widths, and is never much wider than the longest needs."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from probe.engine.decode.paged_widths import MAX_WIDTHS, attended_width, width_ladder


@given(full=st.integers(1, 4096), count=st.integers(1, 12))
def test_the_ladder_is_a_few_widths_up_to_the_whole_table(full, count):
    ladder = width_ladder(full, count)
    assert ladder == tuple(sorted(set(ladder))) and ladder[-1] == full and ladder[0] >= 1
    assert len(ladder) <= count
    # each width at most twice (rounded up) the one below it
    assert all(wider <= 2 * narrower for narrower, wider in zip(ladder, ladder[1:]))


@given(st.data())
def test_the_width_for_any_active_lengths_covers_every_one(data):
    full = data.draw(st.integers(1, 512), label="blocks per table")
    needs = data.draw(st.lists(st.integers(1, full), min_size=1, max_size=32), label="needs")
    ladder = width_ladder(full)
    width = attended_width(max(needs), ladder)
    assert all(need <= width for need in needs)
    assert width in ladder and len(ladder) <= MAX_WIDTHS
    narrower = [w for w in ladder if w < width]
    assert not narrower or narrower[-1] < max(needs)          # the narrowest that holds them
    # waste bounded: within 2× of the need, or the ladder's narrowest width
    assert width <= max(2 * max(needs), ladder[0])


def test_a_need_past_the_table_gets_the_whole_table_and_bad_ladders_are_refused():
    assert attended_width(99, width_ladder(32)) == 32
    assert width_ladder(32) == (1, 2, 4, 8, 16, 32)
    assert width_ladder(6) == (1, 2, 3, 6)
    with pytest.raises(ValueError, match="at least 1"):
        width_ladder(0)
