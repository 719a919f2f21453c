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


_PART = re.compile(r"(tracing|aot|inductor|cache load|other) ([0-9.,]+) (ms|s)\b")


def _shown_seconds(text: str) -> dict[str, float]:
    return {name: float(value.replace(",", "")) / (1000.0 if unit == "ms" else 1.0)
            for name, value, unit in _PART.findall(text)}


@given(st.lists(st.tuples(st.floats(0.05, 90.0), st.floats(0.0, 1.0), st.floats(0.0, 1.0),
                          st.floats(0.0, 1.0)), min_size=1, max_size=6))
def test_the_headers_parts_add_up_to_its_total_recomputed_from_the_events(compiles):
    """Each compile's wall seconds and the share of them dynamo timed in each phase (an H200
    header read "88.6 s: tracing 2.82 s · aot 2.04 s · inductor 4.56 s"): the line shown sums
    to its total, the rest named `other`, to within the rounding of the numbers shown."""
    from probe.analysis.stats import added_phases, event_phases
    from probe.contract.records import CompileEvent

    events = [CompileEvent(compile_id=f"{i}/0", kind="compile", function="f", start_s=float(i),
                           duration_s=wall, reason=None, request_id=None, config_id="c1",
                           tracing_s=wall * a / 3, aot_s=wall * b / 3, inductor_s=wall * c / 3)
              for i, (wall, a, b, c) in enumerate(compiles)]
    total = sum(e.duration_s or 0.0 for e in events)            # the header's total
    phases = phases_within(added_phases(event_phases(e) for e in events), total)
    shown = _shown_seconds(phases.split_text(total))
    timed = sum((e.tracing_s or 0) + (e.aot_s or 0) + (e.inductor_s or 0) for e in events)
    if total - timed > max(0.01, 0.005 * total):
        assert abs(shown["other"] - (total - timed)) <= 0.006 * (total - timed) + 0.0051
    assert abs(sum(shown.values()) - total) <= 0.006 * total * len(shown) + 0.0051 * len(shown)


def test_the_header_carries_the_served_configs_ledger_when_there_is_room(stages):
    """The compiled graphs' pay-back in one line (compile_ledger.ledger_summary of the served
    config, computed in build_live), after the compile time and never over "compiling now"."""
    from probe.analysis.compile_ledger import ledger_summary
    from probe.analysis.live_figures import build_live
    from probe.contract.records import LedgerEntry
    view = stages["compiled"]
    entries = (LedgerEntry(view.config_id, "decode_step", "(1, 1) int64", calls=40,
                           runtime_ms_total=12.0, runtime_ms_median=0.3, compile_s=4.0,
                           paid_back=True, median_of=40),
               LedgerEntry(view.config_id, "encode", "(1, 9) int64", calls=1,
                           runtime_ms_total=2.0, runtime_ms_median=2.0, compile_s=3.0,
                           paid_back=None, median_of=1))
    expected = ledger_summary(entries, view.config_id)
    assert expected == "ledger 2 graphs · 1 paid back · 0 not yet · 1 no eager twin"
    with_ledger = replace(view, ledger=expected)
    from tui.widgets.recompiles import compile_counts
    assert f" · {expected}" in compile_counts(with_ledger, width=200).plain
    assert expected not in compile_counts(with_ledger, width=60).plain       # no room: left out
    data = replace(view_data := _session_of(view), compile_ledger=entries)
    rebuilt = build_live(data, t_s=view.t_s, model=view.model, device=view.device,
                         options=view.options, config_id=view.config_id, window_start_seq=0,
                         compiling_since_s=None, compiling_request=None, device_sample=None,
                         replay=view.replay)
    assert rebuilt.ledger == expected and view_data.compile_ledger == ()


def _session_of(view):
    from types import MappingProxyType

    from probe.contract.session import SessionData
    return SessionData(records=view.recent, events=view.compile_events,
                       configs=MappingProxyType({c.config_id: c for c in view.configs}))
