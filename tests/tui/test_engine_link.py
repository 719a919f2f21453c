"""The engine link: events from the reader thread reach the panels; a dead engine is said,
its data kept, and `R` restarts it."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from probe.contract import protocol
from probe.contract.protocol import Pause, SetSpeed
from probe.contract.records import Notice
from tests.fake_engine import FakeEngine
from tui.messages import EngineHeard


def status(app) -> str:
    return str(app.query_one("#status").render())


async def test_the_engine_is_started_and_its_snapshots_reach_every_panel(make_app, stages, until,
                                                                        read_screen):
    engine = FakeEngine(events=(protocol.EngineLoading("loading t5-small on cpu"),))
    app = make_app(engine, at=None)
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: "loading t5-small on cpu" in status(app))
        assert engine.starts == 1
        engine.emit(protocol.EngineLive(stages["compiled"]))
        await until(pilot, lambda: app.view is stages["compiled"])
        await pilot.pause()
        text = read_screen(app)
        assert "running" in status(app)
    # one figure from each panel, as the synthetic session computes them
    compiled = stages["compiled"]
    assert "3 recompiles" in text                                   # recompilations
    assert "input_ids.size(1) 112→23" in text and "req-0066" in text
    assert "12 breaks" in text and "Data-dependent branching" in text  # graph breaks
    assert "CPU 98%" in text                                        # device
    assert f"queue {compiled.replay.queue_depth}" in text           # throughput
    assert "prev c1" in text and "now c2" in text                   # segments
    assert "1.56 s" in text or "2.05 s" in text                     # latency window p50


async def test_live_messages_coalesce_to_the_newest():
    older, newer = (EngineHeard(protocol.EngineLive(object())),  # type: ignore[arg-type]
                    EngineHeard(protocol.EngineLive(object())))  # type: ignore[arg-type]
    assert newer.can_replace(older)
    assert not newer.can_replace(EngineHeard(protocol.EngineLoading("x")))
    failed = EngineHeard(protocol.EngineFailed("x"))
    assert not failed.can_replace(EngineHeard(protocol.EngineFailed("y")))   # each is said


async def test_a_dead_engine_is_said_its_data_kept_and_R_restarts_it(make_app, stages, until,
                                                                   read_screen):
    engine = FakeEngine()
    app = make_app(engine, at="compiled")
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("plus")                         # state the restart must restore
        await pilot.press("space")
        before = app.view
        engine.die("the engine process exited (code -9)")
        await until(pilot, lambda: app.engine_state == "failed")
        await pilot.pause()
        assert "engine stopped: the engine process exited (code -9)" in status(app)
        assert "R restarts it" in status(app)
        assert app.view is before and "3 recompiles" in read_screen(app)  # kept
        assert "R restart" in read_screen(app).splitlines()[-1]   # the footer offers it

        sent = len(engine.commands())
        await pilot.press("R")
        await until(pilot, lambda: engine.restarts == 1 and len(engine.commands()) > sent)
        await until(pilot, lambda: app.engine_state == "starting")
        assert engine.commands()[sent:] == [SetSpeed(2.0), Pause()]
        engine.emit(protocol.EngineLive(replace(stages["compiled"], t_s=999.0)))
        await until(pilot, lambda: app.engine_state == "live")


async def test_R_does_nothing_while_the_engine_is_alive(make_app):
    engine = FakeEngine()
    app = make_app(engine)
    async with app.run_test() as pilot:
        await pilot.press("R")
        await pilot.pause(0.3)
    assert engine.restarts == 0


async def test_an_engine_that_vanishes_without_a_word_is_noticed(make_app, until):
    engine = FakeEngine()
    app = make_app(engine)
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: engine.starts == 1)
        engine.alive = False                              # no EngineFailed event at all
        await until(pilot, lambda: app.engine_state == "failed")
    assert "exited" in app.engine_note


async def test_a_spawn_that_raises_is_shown_not_raised(make_app, until):
    class Broken(FakeEngine):
        def start(self) -> None:
            raise OSError("cannot fork")

    app = make_app(Broken())
    async with app.run_test() as pilot:
        await until(pilot, lambda: app.engine_state == "failed")
    assert "cannot fork" in app.engine_note


async def test_finished_replay_is_said(make_app, until):
    engine = FakeEngine(events=(protocol.ReplayFinished(),))
    app = make_app(engine)
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: app.engine_state == "finished")
        assert "replay finished" in status(app)


async def test_new_notices_become_notifications_once(make_app, stages, until):
    engine = FakeEngine()
    app = make_app(engine)
    notes: list[tuple[str, str]] = []
    notice = Notice(10.0, "warning", "int8 weight-only quantization is not available here")
    view = replace(stages["baseline"], notices=(notice,))
    async with app.run_test() as pilot:
        app.notify = lambda m, severity="information", **kw: notes.append((m, severity))  # type: ignore[method-assign]
        engine.emit(protocol.EngineLive(view))
        engine.emit(protocol.EngineLive(replace(view, t_s=view.t_s + 1)))
        await until(pilot, lambda: app.view is not None and app.view.t_s > view.t_s)
    assert notes == [(notice.text, "warning")]


async def test_the_compile_clock_ticks_on_local_time_between_snapshots(make_app, stages):
    now = [100.0]
    app = make_app(FakeEngine(), at="compiling", clock=lambda: now[0])
    async with app.run_test(size=(120, 40)) as pilot:
        bar = app.query_one("#status")
        await pilot.pause()
        assert "compiling… 23 s (req-0060 waits)" in status(app)
        now[0] += 5.0
        bar.refresh()
        assert "compiling… 28 s" in status(app)
        app.engine_state = "failed"                  # a dead engine's compile is not running
        assert "compiling… 23 s" in status(app)


@pytest.mark.parametrize("size, said", [
    ((120, 40), "compiling… 23 s (req-0060 waits)  │  offered load exceeds capacity — queue "
                "growing (16)"),
    ((80, 24), "compiling… 23 s │ offered load exceeds capacity (16)"),   # shortened, not cut
])
async def test_status_bar_says_overloaded_plainly_on_one_line(make_app, size, said):
    app = make_app(FakeEngine(), at="compiling")
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        assert "offered load exceeds capacity" not in status(app)   # a compile, not overload
        app.view = replace(app.view, replay=replace(app.view.replay, overloaded=True))
        await pilot.pause()
        first = status(app).splitlines()[0]
        assert said in first and len(first) <= size[0] - 2


async def test_a_poll_that_raises_is_shown_and_R_still_restarts(make_app, until):
    class Flaky(FakeEngine):
        broken = True

        def poll(self, timeout: float):
            if self.broken:
                raise EOFError("pipe closed")
            return super().poll(timeout)

        def restart(self) -> None:
            super().restart()
            self.broken = False

    engine = Flaky()
    app = make_app(engine)
    async with app.run_test() as pilot:
        await until(pilot, lambda: app.engine_state == "failed")
        assert "EOFError: pipe closed" in app.engine_note
        await pilot.press("R")
        await until(pilot, lambda: engine.restarts == 1 and app.engine_state == "starting")


async def test_s_while_the_engine_is_down_saves_what_it_served_from_its_journal(
        make_app, stages, until, tmp_path):
    from probe.engine.state_files import new_journal
    from probe.session_store.journal import JournaledSession, JournalWriter
    from probe.session_store.snapshot import read_document, session_data

    journal = new_journal(tmp_path / "state")
    writer = JournalWriter(journal)
    session = JournaledSession(writer)
    writer.header(0.0, {"model": {"name": "t5-tiny", "dtype": "fp32"}})
    served = stages["compiled"].recent
    for config in stages["compiled"].configs:
        session.config_id(config.options)
    for record in served:
        session.add_record(record)
    engine = FakeEngine(journal_path=journal)
    app = make_app(engine, at="compiled")
    said: list[str] = []
    async with app.run_test(size=(120, 40)) as pilot:
        app.say = lambda text, **kw: said.append(text)  # type: ignore[method-assign]
        engine.die("the engine process exited (code -9)", exit_code=-9)
        await until(pilot, lambda: app.engine_state == "failed")
        await pilot.press("s")
        await until(pilot, lambda: any(t.startswith("session saved: ") for t in said))
    path = next(t for t in said if t.startswith("session saved: "))[len("session saved: "):]
    data = session_data(read_document(path))
    assert [r.id for r in data.records] == [r.id for r in served]
    assert data.notices[-1].text == "the engine died (exit code -9)"
    assert not engine.commands()                          # no engine was asked
    from tui.launch import saved_view
    assert saved_view(Path(path)).notices[-1] == data.notices[-1]   # --load reopens it


async def test_s_while_down_with_nothing_journaled_is_said_not_raised(make_app, until):
    engine = FakeEngine()                                 # keeps no journal
    app = make_app(engine)
    said: list[tuple[str, str]] = []
    async with app.run_test() as pilot:
        app.say = lambda text, severity="information", **kw: said.append((text, severity))  # type: ignore[method-assign]
        engine.die("gone")
        await until(pilot, lambda: app.engine_state == "failed")
        await pilot.press("s")
        await until(pilot, lambda: any("could not save the session" in t for t, _ in said))
    assert any("could not save the session" in t and "no journal" in t and s == "error"
               for t, s in said)
    assert app.engine_state == "failed"                   # a failed save is not a lost engine


def real_engine(target):
    from probe.contract.options import OptConfig
    from probe.contract.settings import EngineSettings
    from probe.engine.process.engine_process import EngineClient, EngineLaunch
    from probe.engine.workload_setup import prepare_workload
    return EngineClient(EngineLaunch(EngineSettings(model="t5-tiny", device="cpu"),
                                     OptConfig(), prepare_workload("chat"), "chat"),
                        target=target)


@pytest.mark.timeout(120)
async def test_an_engine_process_that_cannot_start_is_engine_down_with_its_reason(make_app,
                                                                                  until):
    import engine_targets
    engine = real_engine(engine_targets.exits_at_once)
    app = make_app(engine, at=None)
    try:
        async with app.run_test() as pilot:
            await until(pilot, lambda: app.engine_state == "failed", timeout_s=60)
            assert "the engine process exited (code 3)" in app.engine_note
            await pilot.press("q")
        assert app.reader_stopped.wait(10)
    finally:
        engine.stop()


@pytest.mark.timeout(120)
@pytest.mark.parametrize("key", ["q", "ctrl+q"])
async def test_quit_works_while_the_engine_is_stuck_starting(make_app, until, key):
    import engine_targets
    engine = real_engine(engine_targets.never_reads)
    app = make_app(engine, at=None)
    async with app.run_test() as pilot:
        await until(pilot, lambda: engine.is_alive(), timeout_s=60)
        assert app.engine_state == "starting"
        await pilot.press(key)
    assert app.reader_stopped.wait(10)                    # asyncio.run waits for this thread
    process = engine._process
    engine.stop()                                         # as launch does: it never answers
    assert not process.is_alive()
