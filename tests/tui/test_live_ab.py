"""The live A/B on the dashboard, with a fake engine: `v` runs the doctor's next step, `V` then
an option key runs that change; the status bar says what each arm gets and compares them with
the bootstrap `doctor --verify` uses; `Enter` adopts B, `Esc` keeps A, and neither key does
anything without an A/B. (tests/tui/test_live_ab_engine.py runs it through real engines.)"""

from __future__ import annotations

from dataclasses import replace

from probe.analysis.ab_compare import compare
from probe.analysis.ab_table import comparison_lines
from probe.contract.protocol import (
    ArmLive,
    ArmStarted,
    EngineLive,
    SetOptions,
    WarmFailed,
    WarmReady,
)
from tests.fake_engine import FakeEngine
from tests.probe.test_journal import record
from tests.tui.conftest import screen_text
from tui.live_ab import gather, verdict_text


def status(app) -> str:
    return str(app.query_one("#status").render()).replace("\n", " ")


def records(seqs, config_id: str, at: float, latency_ms: float):
    return tuple(replace(record(seq, config_id), arrival_s=at + seq, end_s=at + seq + 0.5,
                         latency_ms=latency_ms + seq) for seq in seqs)


async def test_v_runs_the_doctors_next_step_beside_the_served_config(make_app, until, stages):
    engine = FakeEngine()
    app = make_app(engine, at="compiled", apply_delay_s=0)      # next step: dynamic=on
    async with app.run_test(size=(160, 40)) as pilot:
        await pilot.press("v")
        await until(pilot, lambda: engine.ab_asks)
        target = engine.ab_asks[-1]
        assert target == stages["compiled"].options.with_option("dynamic", "on")
        assert not engine.commands(SetOptions)       # A serves on, asked nothing
        assert "A/B c2 (A) ↔ new compile=default dynamic=on (B)" in status(app)
        assert "B compiles and prewarms beside c2" in status(app)
        await pilot.press("c")                       # options stay while it runs
        assert app.requested == stages["compiled"].options and not engine.commands(SetOptions)


async def test_an_ab_compares_its_arms_and_enter_adopts_b(make_app, until, stages):
    engine = FakeEngine()
    app = make_app(engine, at="baseline", apply_delay_s=0)
    baseline = stages["baseline"]
    async with app.run_test(size=(200, 40)) as pilot:
        await pilot.press("V", "k")                  # the next change as an A/B
        await until(pilot, lambda: engine.ab_asks)
        assert engine.ab_asks[-1] == baseline.options.with_option("kv_cache", "off")
        assert app.requested == baseline.options
        engine.emit(WarmReady(1, 4.0))
        await until(pilot, lambda: engine.ab == "split")
        engine.emit(ArmStarted("c2", engine.ab_asks[-1]))
        await until(pilot, lambda: app.ab.running is not None and app.ab.running.split and app.ab.running.b_id)
        at = app.ab.running.split_s
        # arrivals after the split: A the odd positions' seqs (from 100), B the even ones
        a, b = records(range(100, 140, 2), "c1", at, 500.0), records(range(101, 140, 2), "c2",
                                                                        at, 900.0)
        engine.emit(EngineLive(replace(baseline, t_s=at + 50, recent=a)))
        engine.emit(ArmLive(replace(baseline, t_s=at + 50, config_id="c2", recent=b)))
        await until(pilot, lambda: app.ab.running.comparison is not None
                    and app.ab.running.compared_n == (20, 20))
        expected = compare(list(a), list(b), slo=baseline.slo)
        assert app.ab.running.comparison == expected            # the headless verify's figures
        text = status(app)
        assert "A/B c1 (A) ↔ c2 kv_cache=off (B)" in text
        assert "every other request each: half the rate" in text and "20 | 20 served" in text
        assert f": {expected.verdict}" in text and expected.verdict == "worse"
        assert "Enter adopts B, Esc keeps A" in text
        await pilot.press("D")                       # the whole comparison, as --verify's
        await until(pilot, lambda: "live A/B: A = c1, B = c2 kv_cache=off" in screen_text(app))
        shown = screen_text(app)
        for line in comparison_lines(expected):
            assert line.strip().split()[0] in shown
        assert f"verdict (p95): {expected.verdict} (20 requests in A, 20 in B)" in shown
        await pilot.press("escape")                  # closes the doctor; the A/B runs on
        await until(pilot, lambda: "live A/B" not in screen_text(app))
        assert app.ab.running is not None and engine.ab_ends == []
        await pilot.press("enter")
        await until(pilot, lambda: engine.ab_ends == ["adopt"] and app.ab.running is None)
        # said at the key, before it ends: arm B may still be compiling what it was handed
        assert any(n.message.startswith("adopting ") for n in app._notifications)
        closing = [n.message for n in app._notifications if "A/B ended" in n.message]
        assert closing and f"20 | 20 served: {verdict_text(expected, tell=False)}" in closing[-1]
        assert app.requested == baseline.options.with_option("kv_cache", "off")
        assert app.engine_state == "starting"


async def test_esc_keeps_a_and_a_failed_arm_b_ends_it(make_app, until):
    engine = FakeEngine()
    app = make_app(engine, at="baseline", apply_delay_s=0)
    async with app.run_test(size=(160, 40)) as pilot:
        await pilot.press("V", "k")
        await until(pilot, lambda: engine.ab_asks)
        await pilot.press("escape")
        await until(pilot, lambda: engine.ab_ends == ["keep"] and app.ab.running is None)
        await pilot.press("V", "k")
        await until(pilot, lambda: len(engine.ab_asks) == 2)
        engine.emit(WarmFailed("the side engine exited (code 1)"))
        await until(pilot, lambda: app.ab.running is None)
        assert "A/B" not in status(app)


async def test_enter_and_esc_do_nothing_without_an_ab(make_app, until):
    engine = FakeEngine()
    app = make_app(engine, at="baseline", apply_delay_s=0)
    async with app.run_test(size=(160, 40)) as pilot:
        await pilot.press("enter", "escape")
        await pilot.pause()
    assert engine.ab_ends == [] and engine.ab_asks == []


async def test_no_ab_without_a_journal_nor_without_a_next_step(make_app, until):
    engine = FakeEngine()
    engine.journal_problem = "no session journal: read-only state folder"
    app = make_app(engine, at="baseline", apply_delay_s=0)
    async with app.run_test(size=(160, 40)) as pilot:
        await pilot.press("v")
        await pilot.pause()
        notes = [n.message for n in app._notifications]
    assert any("no A/B: arm B records into the session's journal" in n for n in notes)
    assert engine.ab_asks == []
    engine = FakeEngine()
    app = make_app(engine, at="paged", apply_delay_s=0)
    async with app.run_test(size=(160, 40)) as pilot:
        await pilot.press("V")
        await pilot.press("V")                       # off again: a plain switch
        await pilot.press("k")
        await until(pilot, lambda: engine.commands(SetOptions))
    assert engine.ab_asks == []


def test_records_are_gathered_by_seq_from_windows_that_scroll():
    first = records(range(0, 6), "c1", 0.0, 100.0)
    held = gather({}, first[:4], "c1", 1.0)
    held = gather(held, first[2:], "c1", 1.0)        # the window moved on
    assert sorted(held) == [1, 2, 3, 4, 5]           # seq 0 ended before the A/B
    assert gather(held, first[2:], "c1", 1.0) is held


def test_before_b_has_served_arm_a_counts_only_what_arrived_since_the_split():
    from probe.contract.options import OptConfig
    from tui.live_ab import LiveAB

    before = records(range(0, 10), "c1", 0.0, 100.0)          # arrivals 0 … 9 s
    ab = LiveAB(OptConfig(kv_cache="off"), "c1", 0.0, split_s=5.0, b_id="c2",
                records_a={r.seq: r for r in before})
    assert [r.seq for r in ab.arms()[0]] == [5, 6, 7, 8, 9] and ab.counts() == (5, 0)
    # once B has served, by seq: A's from the one before B's first
    ab = LiveAB(OptConfig(kv_cache="off"), "c1", 0.0, split_s=5.0, b_id="c2",
                records_a={r.seq: r for r in before if r.seq not in (7, 9)},
                records_b={r.seq: r for r in records([7, 9], "c2", 0.0, 100.0)})
    assert [r.seq for r in ab.arms()[0]] == [6, 8] and ab.counts() == (2, 2)


def running_ab(stages):
    """An A/B compared on 20 | 20 requests, B worse than the doctor predicted."""
    from probe.analysis.next_step import NextStep
    from probe.analysis.stats import segments
    from probe.contract.options import OptConfig
    from tui.live_ab import LiveAB

    a, b = records(range(100, 140, 2), "c1", 5.0, 500.0), records(range(101, 140, 2), "c2",
                                                                    5.0, 900.0)
    (segment,) = segments(["c2"], b, (), (), {}, {}, None, {})
    b_view = replace(stages["baseline"], config_id="c2", segments=(segment,))
    step = NextStep({"batching": "continuous"}, "why", "p95 ≈ 500 ms", predicted_p95_ms=500.0)
    return LiveAB(OptConfig(batching="continuous", decode="fullgraph"), "c1", 0.0,
                  step=step, b_id="c2", split_s=5.0, records_a={r.seq: r for r in a},
                  records_b={r.seq: r for r in b}, b_view=b_view,
                  comparison=compare(list(a), list(b)), compared_n=(20, 20))


async def test_the_status_bar_fits_every_line_at_80_and_200_with_the_verdict(make_app, stages):
    for width in (80, 200):
        app = make_app(FakeEngine(), at="baseline", apply_delay_s=0)
        async with app.run_test(size=(width, 30)) as pilot:
            app.ab.running = running_ab(stages)
            app.show_switch()
            await pilot.pause()
            lines = str(app.query_one("#status").render()).splitlines()
        assert all(len(line) <= width for line in lines), lines
        assert "worse" in lines[-1] and "doctor" in lines[-1] and "20" in lines[-1], lines
        assert "c1" in lines[0] and not lines[0].endswith("…"), lines


def test_the_ab_line_keeps_its_verdict_at_80_and_200_columns_and_one_count(stages):
    """The status line shortens by meaning (tui/fit_line.py): at 200 and at 80 columns the
    result and the doctor's prediction survive; the counts shown are the comparison's own,
    so "N | M served" never reads two different results, and the closing line is that text."""
    from tui.live_ab import ab_line, result_text
    from tui.widgets.status_bar import switch_line

    ab = running_ab(stages)
    comparison = ab.comparison
    for width in (80, 200):
        line = switch_line(ab_line(ab, 60.0), width).plain
        assert len(line) <= width and "…" not in line, line
        assert "20 | 20" in line or "20|20" in line
        assert f": {comparison.verdict}" in line and ("did not hold" in line or "doctor ✗" in line)
    wide = switch_line(ab_line(ab, 60.0), 200).plain
    assert f"20 | 20 served: {verdict_text(comparison, tell=False)}" in wide
    assert "doctor predicted" in wide
    # two more requests an arm served since the comparison: its counts stay its own
    more = replace(ab, records_a={**ab.records_a, **{r.seq: r for r in records([140], "c1", 5.0, 500.0)}},
                   records_b={**ab.records_b, **{r.seq: r for r in records([141], "c2", 5.0, 900.0)}})
    assert more.counts() == (21, 21)
    assert result_text(more).startswith(f"20 | 20 served: {verdict_text(comparison, tell=False)}")
    assert result_text(more).endswith(" · +1 | +1 served since, comparing")


def test_a_line_too_long_for_any_shortening_is_cut_not_emptied():
    from tui.widgets.status_bar import switch_line

    long = "warm switch to compile=default: cut over, no request waited — " + "x" * 200
    line = switch_line(long, 80).plain
    assert line.startswith("⇄ warm switch to compile=default: cut over") and len(line) == 80
