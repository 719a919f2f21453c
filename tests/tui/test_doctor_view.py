"""The doctor on the dashboard: one line with the verdict and the next step (80×24 included),
and the full report on D."""

from __future__ import annotations

import pytest

from tests.fake_engine import FakeEngine
from tests.tui.conftest import wait_for
from tui.doctor_screen import DoctorScreen
from tui.widgets.doctor_line import WAITING, doctor_line

SIZES = {"wide": (120, 40), "compact": (80, 24)}


def test_the_line_names_the_largest_cause_and_the_next_step(stages):
    view = stages["compiled"]
    line = doctor_line(view, 120).plain
    top = view.diagnosis.tail.causes[0]
    assert line.startswith("doctor p95 ")
    assert f"{100 * top.share:.0f}% compile stall" in line
    step = " ".join(f"{k}={v}" for k, v in view.diagnosis.next_step.options.items())
    assert f"next: {step}" in line and line.endswith("(D: why)")
    assert len(doctor_line(view, 80).plain) <= 80 + len(" (D: why)")


def test_the_line_waits_until_a_request_of_the_served_config_finished(stages):
    assert doctor_line(stages["compiling"], 80).plain == WAITING


@pytest.mark.parametrize("size", SIZES)
async def test_the_line_is_on_screen(make_app, read_screen, size):
    app = make_app(FakeEngine(), at="compiled")
    async with app.run_test(size=SIZES[size]) as pilot:
        await wait_for(pilot, lambda: "doctor p95" in read_screen(app))
        lines = read_screen(app).splitlines()
    (line,) = [line for line in lines if "doctor p95" in line]
    assert "compile stall" in line


async def test_d_opens_the_doctor_and_escape_closes_it(make_app, read_screen):
    app = make_app(FakeEngine(), at="compiled")
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("D")
        assert isinstance(app.screen, DoctorScreen)
        text = read_screen(app)
        assert "verdict: p95" in text and "next step: " in text
        assert "the tail's latency by cause:" in text
        assert "production-readiness checklist" in text and "graph breaks inspected" in text
        await pilot.press("escape")
        assert not isinstance(app.screen, DoctorScreen)


@pytest.mark.parametrize("size", SIZES)
async def test_the_line_keeps_its_place_when_the_failures_panel_appears(make_app, read_screen,
                                                                        stages, size):
    """Issue 38: the doctor line vanished once the failures panel appeared."""
    from dataclasses import replace

    view = stages["compiled"]
    failing = replace(view, replay=replace(view.replay, failed=3))
    app = make_app(FakeEngine(), at="compiled")
    async with app.run_test(size=SIZES[size]) as pilot:
        app.view = failing
        await wait_for(pilot, lambda: "failed" in read_screen(app)
                       and "doctor p95" in read_screen(app))
        assert app.query_one("#doctor").display and app.query_one("#failures").display
