"""issue 49: bench's time left jumped from "~124.4 s left" to "~32:46 left" and back to
"~153.9 s left". The projection shown (probe/bench/eta.py) counts down with the clock and
follows the raw figure at a bounded pace; a finished run's news may step it at most ×/÷2;
where it cannot know it says "unknown"."""

from __future__ import annotations

import io
from types import SimpleNamespace

from hypothesis import given
from hypothesis import strategies as st

from probe.bench.eta import STEP, Eta, drift_allowed, step_range
from probe.bench.progress import PRINT_EVERY_S, PRIOR_SHARE, ClusterProgress, Progress

EPS = 1e-6

updates = st.lists(st.tuples(st.floats(0.0, 30.0),                           # seconds since
                             st.one_of(st.none(), st.floats(0.0, 1e5)),     # raw figure
                             st.booleans(),                                  # a run finished
                             st.booleans()),                                 # a guess
                   min_size=1, max_size=60)


@given(updates)
def test_consecutive_projections_move_a_bounded_step_unless_news_or_unknown(steps):
    eta, now, informed = Eta(), 0.0, 0
    previous = None
    for dt, raw, finished, guess in steps:
        now += dt
        informed += finished
        shown = eta.update(now, raw, informed, guess=guess)
        if shown.left_s is None:
            assert "unknown" in shown.text()
        elif previous is not None and previous.left_s is not None:
            countdown = previous.left_s - dt
            if not finished:
                assert abs(shown.left_s - max(countdown, 0.0)) <= \
                    drift_allowed(previous.left_s, dt) + EPS
            elif countdown > 0:
                low, high = step_range(countdown, dt)
                assert low - EPS <= shown.left_s <= high + EPS
        if raw is None:
            assert shown.left_s is None                 # nothing to project from: said so
        previous = shown


@given(st.floats(10.0, 1e4), st.lists(st.floats(0.1, 5.0), min_size=1, max_size=40))
def test_a_raw_figure_that_keeps_time_is_shown_as_it_is(total, ticks):
    eta, now = Eta(), 0.0
    for dt in ticks:
        shown = eta.update(now, max(total - now, 0.0), 1)
        assert shown.left_s is not None and abs(shown.left_s - max(total - now, 0.0)) < EPS
        now += dt


def test_the_issue_s_jump_is_a_bounded_step_and_a_stall_says_unknown():
    eta = Eta()
    first = eta.update(0.0, 124.4, 1).left_s
    second = eta.update(1.0, 32 * 60 + 46, 2).left_s      # a slow run finished: news
    third = eta.update(2.0, 153.9, 3).left_s
    assert first == 124.4 and second is not None and third is not None
    assert second <= (first - 1.0) * STEP + drift_allowed(first - 1.0, 1.0)
    assert third <= second
    # no run finishes and the time left does not fall: once it slipped by more than all it
    # projected, unknown, until a run finishes
    now, shown = 2.0, eta.update(2.0, 200.0, 3)
    while shown.left_s is not None and now < 10_000:
        now += 5.0
        shown = eta.update(now, 200.0, 3)
    assert shown.left_s is None and "slower than estimated" in shown.text()
    assert eta.update(now + 5, 150.0, 3).left_s is None
    assert eta.update(now + 10, 150.0, 4).left_s == 150.0


def test_one_slow_compiled_run_does_not_rescale_the_eager_runs():
    now = [0.0]
    progress = Progress([10.0, 10.0, 10.0, 10.0], stream=io.StringIO(),
                        kinds=["eager", "compiled", "eager", "compiled"], clock=lambda: now[0])
    progress.start_run(0, "E1", "baseline")
    now[0] = 10.0
    progress.finish_run()                               # eager: as estimated
    progress.start_run(1, "E1", "compiled")
    now[0] = 110.0
    progress.finish_run()                               # compiled: 10× its estimate
    progress.start_run(2, "E1", "baseline again")
    prior = PRIOR_SHARE * 40.0              # the study's estimate, counted as run at it
    compiled = (100.0 + prior) / (10.0 + prior)
    assert abs(progress.remaining_s() - (10.0 + 10.0 * compiled)) < EPS
    assert "left" in progress.line() and "a guess" not in progress.line()


def test_compiling_and_serving_are_scaled_apart_where_runs_say_what_compiling_took():
    """A warm cache: the first compiled run compiled in a quarter of its estimate and served
    as estimated; the next run, mostly serving, must not be projected at the first's overall
    ratio (0.4×)."""
    now = [0.0]
    progress = Progress([100.0, 100.0], stream=io.StringIO(), kinds=["compiled"] * 2,
                        clock=lambda: now[0], compiling={0: 80.0, 1: 10.0})
    progress.start_run(0, "E1", "compiled")
    now[0] = 40.0
    progress.finish_run(compiling_s=20.0)
    prior = PRIOR_SHARE * 200.0
    share = (80.0 + 10.0) / 200.0          # of the study's estimate, compiling
    compile_scale = (20.0 + prior * share) / (80.0 + prior * share)     # 0.33, not 0.4
    assert abs(progress.remaining_s() - (10.0 * compile_scale + 90.0 * 1.0)) < EPS
    # a run that does not say what its compiles took: one ratio for the whole, as before
    whole = Progress([100.0, 100.0], stream=io.StringIO(), kinds=["compiled"] * 2,
                     clock=lambda: now[0], compiling={0: 80.0, 1: 10.0})
    now[0] = 0.0
    whole.start_run(0, "E1", "compiled")
    now[0] = 40.0
    whole.finish_run()
    assert abs(whole.remaining_s() - 100.0 * (40.0 + prior) / (100.0 + prior)) < EPS


def test_one_odd_first_run_moves_the_projection_part_of_the_way():
    """Shrinkage: the first of ten equal runs took 10× its estimate. Trusted alone it would
    project the other nine at 10×; counted beside PRIOR_SHARE of the study run as estimated,
    at (100 + 10) / (10 + 10) = 5.5×; as more runs finish as estimated it falls towards what
    they all took together."""
    now = [0.0]
    progress = Progress([10.0] * 10, stream=io.StringIO(), kinds=["compiled"] * 10,
                        clock=lambda: now[0])
    progress.start_run(0, "E1", "odd")
    now[0] = 100.0
    progress.finish_run()
    prior = PRIOR_SHARE * 100.0
    assert abs(progress.remaining_s() - 9 * 10.0 * (100.0 + prior) / (10.0 + prior)) < EPS
    for index in range(1, 9):
        progress.start_run(index, "E1", "as estimated")
        now[0] += 10.0
        progress.finish_run()
    together = (100.0 + 80.0 + prior) / (90.0 + prior)
    assert abs(progress.remaining_s() - 10.0 * together) < EPS


def test_the_first_run_s_figure_is_called_a_guess():
    now = [0.0]
    progress = Progress([30.0, 30.0], stream=io.StringIO(), clock=lambda: now[0])
    progress.start_run(0, "E1", "baseline")
    assert "~1:00 left (a guess until a run finishes)" in progress.line() or \
        "60.0 s left (a guess until a run finishes)" in progress.line()


events = st.lists(st.tuples(st.sampled_from(["tick", "request", "finish"]),
                            st.floats(0.0, 120.0),          # seconds before it
                            st.floats(0.0, 1.0)),           # the run's fraction done
                  min_size=1, max_size=80)


@given(st.lists(st.floats(1.0, 600.0), min_size=1, max_size=8),
       st.lists(st.sampled_from(["eager", "compiled"]), min_size=8, max_size=8), events)
def test_the_bench_line_never_jumps_between_two_draws_without_a_finished_run(estimates, kinds,
                                                                               steps):
    """Any bench: runs of any estimates and kinds, finishing at any time, requests done at
    any pace; between two draws with no run finished in between, the time left shown moves
    from its countdown by at most the drift allowed, or says unknown."""
    now = [0.0]
    progress = Progress(estimates, stream=io.StringIO(), kinds=kinds[:len(estimates)],
                        clock=lambda: now[0])
    index = 0
    progress.start_run(index, "E1", "run")
    previous, finished = progress.eta.update(now[0], progress.remaining_s(), 0, guess=True), 0
    for kind, dt, fraction in steps:
        now[0] += dt
        if kind == "finish" and index < len(estimates):
            progress.finish_run()
            finished += 1
            index += 1
            if index < len(estimates):
                progress.start_run(index, "E1", "run")
        elif kind == "request":
            progress.request_done("pass 1/3", 1, 3, fraction)
        shown = progress.projection()
        news = kind == "finish"
        if shown.left_s is not None and previous.left_s is not None and not news:
            countdown = max(previous.left_s - dt, 0.0)
            assert abs(shown.left_s - countdown) <= drift_allowed(previous.left_s, dt) + EPS
        previous = shown


def test_while_the_time_left_is_unknown_the_bar_stays_where_it_was():
    """A real `bench --quick` on the busy 2-core VM: the bar read 33%, then 15% once the time
    left was unknown (the raw figure's share): it keeps the last share it knew instead."""
    now = [0.0]
    progress = Progress([20.0, 20.0], stream=io.StringIO(), clock=lambda: now[0])
    progress.start_run(0, "E1", "baseline")

    def share(line: str) -> str:
        return line[line.index("]") + 1:].split("%")[0]

    shown, unknown = [], []
    for t in range(5, 400, 5):
        now[0] = float(t)
        line = progress.line()
        (unknown if "time left unknown" in line else shown).append(share(line))
        if unknown:
            assert unknown[-1] == shown[-1]
    assert unknown


def test_open_loop_estimates_scale_as_the_eager_runs_not_the_compiled():
    """E7 and E8's estimates are measured seconds of eager serving: a compiled run 3× over its
    estimate (the cost model's error on compiled work) must not triple them."""
    now = [0.0]
    progress = Progress([10.0, 10.0, 100.0], stream=io.StringIO(),
                        kinds=["compiled", "eager", "open loop"], clock=lambda: now[0])
    progress.start_run(0, "E1", "compiled")
    now[0] = 30.0
    progress.finish_run()
    progress.start_run(1, "E1", "eager")
    now[0] = 40.0
    progress.finish_run()                               # eager: as estimated
    assert abs(progress.remaining_s() - 100.0) < EPS


def test_off_a_terminal_the_line_is_printed_at_least_once_a_minute():
    """A long pass in one phase left a log silent for minutes: the line is printed when a phase
    starts and, off a terminal, at least every PRINT_EVERY_S besides (not at every request)."""
    now = [0.0]
    stream = io.StringIO()
    progress = Progress([600.0], stream=stream, clock=lambda: now[0])
    progress.start_run(0, "E1", "baseline")
    for done in range(1, 61):               # one request every 5 s, all in one phase
        now[0] = 5.0 * done
        progress.request_done("pass 1/3", done, 60, done / 60)
    lines = stream.getvalue().splitlines()
    # the start (0 s), the phase's first request (5 s), then one a minute after it: 65, 125, …
    assert len(lines) == 2 + int((300 - 5) // PRINT_EVERY_S)
    assert [line.split(" elapsed")[0].rsplit("· ", 1)[1] for line in lines[2:]] == [
        f"{5 + PRINT_EVERY_S * k:.1f} s" for k in range(1, len(lines) - 1)]
    assert all("pass 1/3" in line for line in lines[1:])


def test_a_clusters_line_is_printed_once_a_minute_off_a_terminal_too():
    now = [0.0]
    stream = io.StringIO()
    progress = ClusterProgress([SimpleNamespace(id="a", estimate_s=600.0, title="run a")],
                               slots=1, stream=stream, clock=lambda: now[0])
    progress.task_started("a", "node-1")
    printed = len(stream.getvalue().splitlines())
    for step in range(1, 25):               # the same phase, reported every 5 s for 120 s
        now[0] = 5.0 * step
        progress.task_phase("a", "pass 1/3")
    assert len(stream.getvalue().splitlines()) - printed <= 1 + int(120 // PRINT_EVERY_S)
    assert len(stream.getvalue().splitlines()) - printed >= int(120 // PRINT_EVERY_S)
