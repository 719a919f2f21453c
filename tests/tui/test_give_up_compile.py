"""A pending toggle says what it waits for; `x` gives up a running compile: the engine restarts
serving the previous config, and the session goes on (the fake engine records it)."""

from __future__ import annotations

from probe.contract.protocol import SetOptions
from tests.fake_engine import FakeEngine
from tests.tui.conftest import screen_text


def status(app) -> str:
    return "\n".join(screen_text(app).splitlines()[:4])


async def test_a_pending_toggle_names_the_compile_it_waits_for(make_app, until):
    engine = FakeEngine()
    app = make_app(engine, at="compiling", apply_delay_s=0)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("b")                               # bucketing: pending
        await until(pilot, lambda: engine.commands(SetOptions))
        await pilot.pause()
        text = status(app)
    compiling = app.view.compiling
    assert compiling is not None and compiling.request_id in text
    assert f"bucketing→on waits: after {compiling.request_id}'s compile, 23 s so far" in text
    assert "x gives it up and serves c1" in text


async def test_the_waits_line_keeps_what_waits_and_the_key_at_80_and_200(make_app, until):
    """Shortened by meaning (tui/fit_line.py): the explanation shortens, what waits and the
    key that ends the wait stay."""
    for width in (80, 200):
        engine = FakeEngine()
        app = make_app(engine, at="compiling", apply_delay_s=0)
        async with app.run_test(size=(width, 30)) as pilot:
            await pilot.press("b")
            await until(pilot, lambda e=engine: e.commands(SetOptions))
            await pilot.pause()
            (line,) = [line for line in str(app.query_one("#status").render()).splitlines()
                       if line.startswith("→ ")]
        assert len(line) <= width and not line.endswith("…"), line
        assert line.startswith("→ bucketing→on waits") and "x" in line and "c1" in line, line


async def test_x_gives_up_the_compile_and_restarts_the_engine_on_the_previous_config(
        make_app, until, stages):
    engine = FakeEngine()
    app = make_app(engine, at="compiling", apply_delay_s=0)
    previous = next(e.options for e in stages["compiling"].configs if e.config_id == "c1")
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("x")          # the fake engine keeps no journal: x asks first …
        await pilot.pause()
        assert engine.restarts == 0
        await pilot.press("x")          # … and the second press goes ahead
        await until(pilot, lambda: engine.restarts == 1)
        assert engine.abandoned == stages["compiling"].compiling
        assert engine.commands(SetOptions)[-1] == SetOptions(previous)
        assert app.requested == previous
        assert app.engine_state == "starting"


async def test_x_without_a_compile_running_says_so_and_restarts_nothing(make_app):
    engine = FakeEngine()
    app = make_app(engine, at="baseline", apply_delay_s=0)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("x")
        await pilot.pause(0.3)
    assert engine.restarts == 0 and not engine.commands(SetOptions)


async def test_x_without_a_journal_asks_first_and_says_what_would_be_lost(make_app, read_screen):
    """Issue 38: x restarted the engine and lost the queued requests with no warning."""
    engine = FakeEngine()
    app = make_app(engine, at="compiling", apply_delay_s=0)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.press("x")
        await pilot.pause()
        said = " ".join(n.message for n in app._notifications)
        assert engine.restarts == 0
        assert "no journal" in said and "queued" in said and "Press x again" in said


async def test_x_with_a_journal_carries_the_queue_at_once(make_app, until, tmp_path, stages):
    from probe.engine.state_files import new_journal
    from probe.session_store.journal import JournaledSession, JournalWriter
    journal = new_journal(tmp_path / "state")
    writer = JournalWriter(journal)
    JournaledSession(writer)
    writer.header(1000.0, {})
    engine = FakeEngine(journal_path=journal)
    app = make_app(engine, at="compiling", apply_delay_s=0)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.press("x")
        await until(pilot, lambda: engine.restarts == 1)
        said = " ".join(n.message for n in app._notifications)
    assert "carried across and served under it" in said or "no request is lost" in said


async def test_a_warm_switch_change_does_not_follow_the_serving_engines_compiles(make_app,
                                                                                  until):
    """Issue 38: with S on, `b` read "waits: after r47's compile", then "after r48's compile"
    forever, beside "c3 serves meanwhile" while c3 was stalled. It waits for the cut over, and
    the line says the serving config is stalled."""
    engine = FakeEngine()
    app = make_app(engine, at="compiling", apply_delay_s=0)
    async with app.run_test(size=(200, 48)) as pilot:
        await pilot.press("S")
        await pilot.press("b")
        await until(pilot, lambda: engine.warm_asks)
        await pilot.pause()
        text = status(app) + "\n" + "\n".join(screen_text(app).splitlines()[4:6])
    compiling = app.view.compiling
    assert f"after {compiling.request_id}'s compile" not in text
    assert "lands at the cut over" in text
    assert f"c2 is stalled meanwhile, compiling for {compiling.request_id}" in text
    assert "c2 serves meanwhile" not in text
