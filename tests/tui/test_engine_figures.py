"""What the engine measures besides latency reaches the screen: the compile running now (its
seconds ticking, the waiting request's stall only growing), drift beside latency (and the
random-weights caveat), the paged KV pool and what the budget holds under each layout, the
roofline ratio and the compile break-even; and the latency plot's y labels stay on its
y axis."""

from __future__ import annotations

import io
import math
from dataclasses import replace

import pytest
from rich.console import Console

from probe.analysis.break_even_live import eager_twin
from probe.analysis.stats import MIN_BREAK_EVEN_REQUESTS
from probe.contract.figures import DriftStats
from probe.contract.options import OptConfig
from probe.contract.records import CompileInProgress
from tests.fake_engine import FakeEngine
from tests.tui.synthetic import MEASURED_UNIX
from tui import derive
from tui.widgets.compile_clock import CompileClock
from tui.widgets.kv_cache import kv_detail, kv_headline
from tui.widgets.latency import break_even_line, cost_summary, log_ticks, roofline_line, twin_keys
from tui.widgets.recompiles import Running, compile_counts, compile_feed, latest_event
from tui.widgets.segments import fmt_drift, segment_rows, segments_subtitle

NOW_UNIX = MEASURED_UNIX + 3.2 * 86400


def text(renderable, width: int = 100) -> str:
    console = Console(width=width, record=True, color_system=None, file=io.StringIO())
    console.print(renderable)
    return console.export_text()


# -- the compile running now ---------------------------------------------------------------------
def test_the_running_compile_is_the_feeds_first_row(stages):
    compiled = stages["compiled"]
    running = Running(CompileInProgress("0/4", None, "req-0199", compiled.t_s - 7.6, 0.0),
                      elapsed_s=7.6, stall_s=7.6)
    feed = text(compile_feed(compiled.compile_events, running=running), width=120).splitlines()
    assert "compiling" in feed[1] and "0/4" in feed[1] and "7s…" in feed[1]
    assert "req-0199" in feed[1] and "frame 0" in feed[1] and "in progress" in feed[1]
    assert "0/3" in feed[2]                                  # then the events, newest first
    assert len(text(compile_feed((), running=running), width=120).splitlines()) == 2
    assert "no compiles yet" in text(compile_feed(()))
    two = text(compile_feed(compiled.compile_events, rows=2, running=running), width=120)
    assert len(two.splitlines()) == 3 and "0/3" in two and "0/2" not in two   # rows kept


def test_a_request_waiting_on_its_second_compile_says_its_whole_stall(stages):
    compiled = stages["compiled"]
    second = CompileInProgress("0/5", "forward", "req-0199", compiled.t_s - 4.0, 21.5)
    running = Running(second, elapsed_s=4.0, stall_s=25.5)
    row = text(compile_feed((), running=running), width=120).splitlines()[1]
    assert "forward" in row and "4s…" in row and "req-0199 stalled 25 s in all" in row
    assert text(latest_event((), running)).startswith(
        "now compiling 0/5 forward · 4 s (req-0199 waits)")


def test_counts_say_a_compile_is_running_when_it_fits(stages):
    compiling = stages["compiling"]
    assert text(compile_counts(compiling)).startswith("0 compiles · 0 recompiles · compiling now")
    assert "compiling" not in text(compile_counts(compiling, width=30))
    assert "compiling now" not in text(compile_counts(stages["compiled"]))


def test_the_compile_clock_adds_local_time_and_stops_with_the_engine(stages):
    compiling = stages["compiling"]
    now = [50.0]
    clock = CompileClock(lambda: now[0])
    clock.arrived(compiling)
    at_publish = compiling.t_s - compiling.compiling.since_s
    assert clock.elapsed_s(compiling, "live") == pytest.approx(at_publish)
    now[0] += 5.0
    clock.arrived(compiling)                       # the same snapshot again: no new arrival
    assert clock.elapsed_s(compiling, "live") == pytest.approx(at_publish + 5.0)
    assert clock.stall_s(compiling, "live") == pytest.approx(at_publish + 5.0)
    assert clock.stall_s(compiling, "failed") == pytest.approx(at_publish)   # a dead engine
    assert clock.stall_s(compiling, "read-only") == pytest.approx(at_publish)
    assert clock.stall_s(stages["baseline"], "live") is None
    assert clock.elapsed_s(None, "live") is None


def test_one_requests_stall_only_grows_across_its_successive_compiles(stages):
    """req waits on 0/1 (6 s), then on 0/2: the status bar's clock goes on from 6 s, never
    back to 0, while the feed's clock is the running compile's own."""
    base = stages["compiling"]
    now = [0.0]
    clock = CompileClock(lambda: now[0])
    first = replace(base, t_s=100.0, compiling=CompileInProgress("0/1", "forward", "req-7",
                                                                 95.0, 0.0))
    second = replace(base, t_s=101.5, compiling=CompileInProgress("0/2", "forward", "req-7",
                                                                  101.0, 6.0))
    readings = []
    for view, local in ((first, 0.0), (first, 0.9), (second, 0.0), (second, 2.0)):
        if local == 0.0:
            clock.arrived(view)
            arrived_at = now[0]
        now[0] = arrived_at + local
        readings.append((clock.stall_s(view, "live"), clock.elapsed_s(view, "live")))
    stalls = [stall for stall, _ in readings]
    assert stalls == sorted(stalls) and stalls == pytest.approx([5.0, 5.9, 6.5, 8.5])
    assert [elapsed for _, elapsed in readings] == pytest.approx([5.0, 5.9, 0.5, 2.5])


async def test_the_status_bar_shows_the_requests_whole_stall(make_app, stages):
    compiling = stages["compiling"]
    later = replace(compiling, compiling=replace(compiling.compiling, waited_before_s=30.0))
    app = make_app(FakeEngine(), at=None)
    async with app.run_test(size=(120, 40)) as pilot:
        app.view = later
        await pilot.pause()
        first = str(app.query_one("#status").render()).splitlines()[0]
    assert "compiling… 53 s (req-0060 waits)" in first       # 30 s before + 23 s of this one


async def test_the_running_compile_says_which_stage_it_is_in(make_app, stages):
    """The stage the engine read off the compiling thread: in the status bar, the feed's
    running row and the compact layout's line; a compile with none read shows none."""
    compiling = stages["compiling"]
    staged = replace(compiling, compiling=replace(compiling.compiling, stage="inductor"))
    app = make_app(FakeEngine(), at=None)
    async with app.run_test(size=(120, 40)) as pilot:
        app.view = staged
        await pilot.pause()
        first = str(app.query_one("#status").render()).splitlines()[0]
    assert "compiling… 23 s · inductor (req-0060 waits)" in first
    running = Running(staged.compiling, elapsed_s=23.0, stall_s=23.0)
    feed = text(compile_feed(staged.compile_events, running=running), width=140).splitlines()
    assert "in progress · inductor" in feed[1]
    assert str(latest_event((), running)).endswith("· 23 s · inductor (req-0060 waits)")
    unstaged = Running(compiling.compiling, elapsed_s=23.0, stall_s=23.0)
    assert "in progress ·" not in text(compile_feed((), running=unstaged), width=140)


async def test_the_feed_ticks_between_snapshots_and_stops_with_the_engine(
        make_app, stages, monkeypatch, read_screen, until):
    now = [0.0]
    app = make_app(FakeEngine(), at="compiling", clock=lambda: now[0])   # the app's clock
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        assert "compiling 0/0 23s… req-0060" in read_screen(app)
        now[0] = 5.0                              # its own tick redraws it, no snapshot came
        await until(pilot, lambda: "compiling 0/0 28s… req-0060" in read_screen(app))
        app.engine_state = "failed"                # bound: the panel's clock stops with it
        await pilot.pause()
        assert "compiling 0/0 23s… req-0060" in read_screen(app)


# -- drift ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("drift, wide, narrow", [
    (DriftStats("ref", 8, 0.9712, 0.625, 7.0), "97.1%·62% n=8", "97%·62%"),
    (DriftStats("ref", 15, 1.0, 1.0, None), "100%·100% n=15", "100%·100%"),
    (None, "—", "—")])
def test_drift_reads_token_agreement_then_exact_match(drift, wide, narrow):
    assert fmt_drift(drift) == wide and fmt_drift(drift, narrow=True) == narrow


def test_segments_show_drift_beside_latency(stages):
    measured = stages["measured"]
    rows = segment_rows(measured)
    c2 = next(s for s in measured.segments if s.config_id == "c2")
    assert rows[1]["drift tok·req"] == (f"{c2.drift.token_agreement:.1%}·"
                                        f"{c2.drift.exact_match:.0%} n={c2.drift.sampled_requests}")
    assert rows[0]["drift tok·req"] == f"100%·100% n={rows[0]['drift tok·req'].split('=')[1]}"
    assert segment_rows(stages["baseline"])[0]["drift tok·req"] == "—"


@pytest.mark.parametrize("width", [112, 72, 40])
def test_a_presets_drift_is_said_to_be_overstated(stages, width):
    shown = segments_subtitle(stages["measured"], width)
    assert len(shown) <= width and "random weights overstate" in shown and "t5-small" in shown
    mine = segments_subtitle(replace(stages["measured"], model="/models/my-t5"), width)
    assert "random" not in mine and "drift" in mine


# -- KV: the paged pool, waste for every layout --------------------------------------------------
def test_the_paged_pool_shows_blocks_waste_and_what_the_budget_holds(stages):
    paged = stages["paged"]
    budget = derive.kv_budget(paged)
    pool = budget.pool
    c5 = next(s for s in paged.segments if s.config_id == "c5")
    lines = [line.strip() for line in text(kv_detail(paged), width=60).splitlines()]
    assert lines[0] == (f"pool {pool.blocks_used}/{pool.blocks_total} blocks held · "
                        f"{pool.blocks_total - pool.blocks_used} free · peak {pool.blocks_peak}")
    assert lines[1] == (f"144 MiB holds static {budget.static_requests} · paged "
                        f"≈{budget.paged_requests} req")
    assert lines[2].startswith("c5 mean request held ")
    assert lines[3] == f"waste {c5.kv_waste_pct:.0f}% of what c5 held, never filled"
    assert lines[4].startswith("latest request held ")
    assert text(kv_headline(paged, width=30)).strip() == (
        f"{pool.blocks_used}/{pool.blocks_total} blocks · waste {c5.kv_waste_pct:.0f}%")
    assert text(kv_headline(paged, width=46)).startswith("peak held ")


def test_the_static_layout_shows_its_waste(stages):
    continuous = stages["continuous"]
    c4 = next(s for s in continuous.segments if s.config_id == "c4")
    shown = text(kv_detail(continuous), width=60)
    assert f"waste {c4.kv_waste_pct:.0f}% of what c4 held" in shown and c4.kv_waste_pct > 60
    assert "pool" not in shown and "blocks" not in text(kv_headline(continuous, width=30))


# -- roofline and break-even ---------------------------------------------------------------------
def test_tpot_against_the_roofline(stages):
    measured = stages["measured"]
    from probe.analysis.stats import summarize
    from probe.analysis.steady_state import cold_chain
    chain = cold_chain(measured.recent, measured.compile_events)
    warm = [r.tpot_ms for r in measured.recent if r.config_id == "c2" and r.ok and chain.is_warm(r)]
    ratio = summarize(warm).p50 / (measured.roofline.step_bytes / (31.8e9) * 1e3)  # recomputed
    shown = text(roofline_line(measured, 90, NOW_UNIX)).strip()
    assert shown == (f"c2 TPOT 12 ms (warm p50, {len(warm)} req) · {ratio:.2f}× roofline "
                     "(fp32 · 31.8 GB/s, measured 3 d ago)")
    assert text(roofline_line(measured, 60, NOW_UNIX)).strip() == (
        f"c2 TPOT 12 ms (warm p50, {len(warm)} req) · {ratio:.2f}× roofline (fp32)")
    none_served = text(roofline_line(replace(measured, config_id="c9"), 80, NOW_UNIX))
    assert "c9 TPOT — · roofline 4.8 ms (fp32" in none_served       # nothing served yet
    assert "not measured" in text(roofline_line(stages["baseline"], 80, NOW_UNIX))


def test_break_even_in_every_state(stages):
    measured = stages["measured"]
    found = measured.break_even
    assert text(break_even_line(measured, 80)).strip() == (
        f"compile repaid after ≈{math.ceil(found.requests)} requests (c2 vs c1)")
    never = replace(measured, break_even=replace(found, requests=math.inf))
    assert text(break_even_line(never, 80)).strip() == (
        "compile never repaid: compiled is not faster (c2 vs c1)")
    assert text(break_even_line(stages["compiling"], 80)).strip() == (
        f"compile break-even: measuring (≥{MIN_BREAK_EVEN_REQUESTS} requests each side) "
        "(c2 vs c1)")
    assert text(break_even_line(stages["bucketing"], 80)).strip() == (
        f"break-even: serve bucketing=on eager too (c→compile=off), "
        f"≥{MIN_BREAK_EVEN_REQUESTS} requests")
    assert text(break_even_line(stages["bucketing"], 60)).strip() == (
        "break-even: serve bucketing=on eager too (c→compile=off)")
    assert "runs eager" in text(break_even_line(stages["baseline"], 80))


def test_the_keys_to_the_eager_twin():
    served = OptConfig(compile="max-autotune", freezing="on", bucketing="on")
    assert twin_keys(served, eager_twin(served)) == "c→compile=off f→freezing=off"


def test_the_compact_layout_says_both_in_a_few_words(stages):
    measured = stages["measured"]
    ratio = measured.roofline.ratio(derive.segment(measured, "c2").tpot_ms.p50)
    requests = math.ceil(measured.break_even.requests)
    assert cost_summary(measured) == f"{ratio:.2f}× roofline · repaid ≈{requests} req"
    assert cost_summary(stages["bucketing"]) == "break-even: no eager twin"
    assert cost_summary(stages["baseline"]) is None


async def test_roofline_and_break_even_fit_both_layouts(make_app, read_screen, stages):
    measured = stages["measured"]
    ratio = measured.roofline.ratio(derive.segment(measured, "c2").tpot_ms.p50)
    requests = math.ceil(measured.break_even.requests)
    for size in ((120, 40), (80, 24)):
        app = make_app(FakeEngine(), at="measured")
        async with app.run_test(size=size) as pilot:
            await pilot.pause()
            shown = read_screen(app)
        assert f"{ratio:.2f}× roofline" in shown, size
        assert f"≈{requests} req" in shown, size
    assert "measured 3 d ago" in shown or size == (80, 24)


# -- the latency plot ----------------------------------------------------------------------------
@pytest.mark.parametrize("at", ["compiling", "bucketing", "measured"])
async def test_the_plots_y_labels_sit_on_its_y_axis(make_app, read_screen, stages, at):
    """Each decade's label is on a row of the y axis ("100 ms┤"), none on the x axis' rows."""
    values = [r.latency_ms for r in stages[at].recent]
    _, labels = log_ticks(min(values), max(values))
    app = make_app(FakeEngine(), at=at)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        lines = read_screen(app).splitlines()
    title = next(i for i, line in enumerate(lines) if "session time (s)" in line)
    axis, ticks = lines[title - 2], lines[title - 1]
    assert "└" in axis
    for label in labels:
        assert any(f"{label}┤" in line for line in lines[:title - 2]), label
        assert label not in axis and label not in ticks, label


def test_log_ticks_span_at_least_one_decade():
    assert log_ticks(200.0, 800.0)[0] == [100.0, 1000.0]
    assert log_ticks(100.0, 100.0)[0] == [100.0, 1000.0]
