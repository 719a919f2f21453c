"""The Recompilations header's split never exceeds its total, and the feed's time column keeps
one format for the whole session (issue 22's smaller defects)."""

from __future__ import annotations

import re
from dataclasses import replace

from hypothesis import given
from hypothesis import strategies as st

from probe.analysis.stats import phases_within
from probe.common.units import fmt_clock_column, fmt_s
from probe.contract.figures import CompilePhases
from tui.widgets.recompiles import compile_time_texts

seconds = st.floats(0.0, 500.0, allow_nan=False)


@given(seconds, seconds, seconds, seconds, st.floats(0.01, 2000.0))
def test_a_split_shown_beside_a_total_adds_up_to_at_most_the_total(tracing, aot, inductor,
                                                                     cache, total):
    phases = CompilePhases(tracing, aot, inductor, cache)
    within = phases_within(phases, total)
    if phases.total_s > total:
        assert abs(within.total_s - total) <= 1e-9 * total
    else:
        assert within == phases                  # under its total: as dynamo timed it
    if phases.total_s > 0:                       # each part keeps its share
        for name, part in phases.parts().items():
            assert abs(within.parts()[name] * phases.total_s
                       - part * within.total_s) <= 1e-6 * max(1.0, phases.total_s * total)


def test_the_header_no_longer_says_a_part_larger_than_the_whole(stages):
    view = stages["compiled"]
    segment = next(s for s in view.segments if s.compile_s)
    skewed = replace(segment, compile_s=4.35, compile_phases=CompilePhases(4.37, 0.0, 0.0))
    view = replace(view, segments=(skewed,))
    richest = compile_time_texts(4.35, view)[0]
    assert richest == f" ({fmt_s(4.35)}: tracing {fmt_s(4.35)})"


@given(st.floats(0.0, 10 * 3600.0, allow_nan=False))
def test_the_feed_time_column_keeps_one_format(t_s):
    shown = fmt_clock_column(t_s)
    assert re.fullmatch(r"\d+:\d\d" if t_s < 3600 else r"\d+:\d\d:\d\d", shown)
    minutes_seconds = [int(p) for p in shown.split(":")]
    total = sum(v * 60 ** i for i, v in enumerate(reversed(minutes_seconds)))
    assert total == int(t_s)


def test_598_and_620_seconds_read_alike():
    assert (fmt_clock_column(598.5), fmt_clock_column(620.0)) == ("9:58", "10:20")
