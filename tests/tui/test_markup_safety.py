"""User data reaches the screen as text, never as Rich/Textual markup: a snapshot folder named
`runs[/]`, an engine notice, an error message or a guard failure with brackets in it must show
as written and never end the session."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from probe.contract.protocol import EngineLive, SaveSnapshot
from probe.contract.records import CompileInProgress, Notice, RooflineStatus
from tests.fake_engine import FakeEngine

HOSTILE = "[/] [bold]not bold[/bold] [link=x]"


async def test_s_with_a_markup_path_and_a_markup_notice_keeps_running(
        make_app, stages, tmp_path, monkeypatch, until, read_screen):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "runs[").mkdir()        # `s` makes the snapshot folder, not its parents
    engine = FakeEngine()
    app = make_app(engine, snapshot_dir=Path("runs[/]"))
    baseline = stages["baseline"]
    notice = Notice(baseline.t_s + 1.0, "warning", f"the engine says {HOSTILE}")
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        engine.emit(EngineLive(replace(baseline, t_s=baseline.t_s + 2.0, notices=(notice,))))
        await until(pilot, lambda: app.view.t_s > baseline.t_s)
        await pilot.press("s")
        await until(pilot, lambda: "session saved" in read_screen(app)
                    and "not bold" in read_screen(app))
        shown = read_screen(app)
        assert app.is_running
        assert "the engine says [/] [bold]not bold[/bold]" in shown
        assert "runs[" in shown
        await pilot.press("b")                     # still answering keys
    (command,) = engine.commands(SaveSnapshot)
    assert command.path.startswith(str(Path("runs[/]") / "infertop-"))
    assert list((tmp_path / "runs[" / "]").glob("*.svg"))


async def test_markup_in_engine_data_shows_as_written(make_app, stages, read_screen, until):
    failing = stages["failing"]
    event = replace(failing.compile_events[-1], reason=f"guard {HOSTILE}", function="f[/]")
    view = replace(failing, compile_events=failing.compile_events + (event,),
                       model=f"t5{HOSTILE}")
    app = make_app(FakeEngine(), at=None)
    async with app.run_test(size=(120, 40)) as pilot:
        app.view = view
        await until(pilot, lambda: "f[/]" in read_screen(app))
        shown = read_screen(app)
    assert "guard [/] [bold]not bold" in shown and "f[/]" in shown
    assert "OutOfMemoryError: CPU out of memory. Tried to allocate 1.50 GiB [/]" in shown \
        or "tensor a (512)" in shown                                  # the latest failure
    assert "OutOfMemoryError" in shown and "RuntimeError" in shown   # kinds, in the title


async def test_markup_in_a_running_compile_and_the_roofline_shows_as_written(
        make_app, stages, read_screen, until):
    compiled = stages["compiled"]
    running = CompileInProgress("1/0", "g[/b]", "req[/]", compiled.t_s - 3.0, 0.0)
    roofline = RooflineStatus("bf16[/]", 1, 1.0, 0.0, 1.0)
    view = replace(compiled, compiling=running, roofline=roofline)
    app = make_app(FakeEngine(), at=None)
    async with app.run_test(size=(120, 40)) as pilot:
        app.view = view
        await until(pilot, lambda: "g[/b]" in read_screen(app))
        shown = read_screen(app)
    assert "g[/b]" in shown and "req[/] waits" in shown and "(bf16[/] · 1.0 GB/s" in shown
