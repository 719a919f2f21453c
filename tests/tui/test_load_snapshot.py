"""`infertop --load SNAPSHOT.json`: a saved session in the same panels, read-only, no engine;
and the launcher's live path, with the engine process faked."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from probe.common.atomic import write_json_atomic
from probe.common.errors import BadInput
from probe.contract.protocol import Shutdown
from probe.session_store.snapshot import snapshot_document
from tests.fake_engine import FakeEngine
from tests.tui.synthetic import session_at
from tui import launch as launch_module
from tui.app import InfertopApp
from tui.launch import launch, saved_view


def status(app) -> str:
    return str(app.query_one("#status").render())


@pytest.fixture
def saved(tmp_path: Path, stages) -> Path:
    bucketing = stages["bucketing"]
    document = snapshot_document(
        session_at(bucketing.t_s, "c3"), environment={"device": "cpu", "torch": "2.13"},
        model={"name": "t5-small"}, trace={"name": "chat"},
        settings={"bucket_edges": list(bucketing.bucket_edges)})
    return write_json_atomic(tmp_path / "session.json", document)


def test_a_saved_session_becomes_the_view_the_panels_show(saved, stages):
    loaded = saved_view(saved)
    live = stages["bucketing"]
    assert loaded.read_only and loaded.config_id == "c3" and loaded.options == live.options
    assert loaded.segments == live.segments                # same records, same figures
    assert loaded.compile_events == live.compile_events
    assert loaded.model == "t5-small" and loaded.device == "cpu" and loaded.replay.trace == "chat"
    assert loaded.bucket_edges == live.bucket_edges
    assert loaded.device_sample is None and loaded.compiling_since_s is None


@pytest.mark.parametrize("content, message", [
    ("{not json", "not valid JSON"),
    (json.dumps({"schema_version": 99}), "schema_version 99"),
    (json.dumps({"schema_version": 1, "requests": [{"id": "x"}]}), "not an infertop session"),
])
def test_a_bad_snapshot_file_is_a_config_error(tmp_path, content, message):
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(BadInput, match=message):
        saved_view(path)


async def test_loaded_sessions_are_read_only(saved, tmp_path, read_screen):
    loaded = saved_view(saved)
    app = InfertopApp(None, initial=loaded, options=loaded.options, snapshot_dir=tmp_path,
                      speed=1.0, read_only=True, source=str(saved))
    said: list[str] = []
    async with app.run_test(size=(120, 40)) as pilot:
        app.say = lambda text, **kw: said.append(text)     # type: ignore[method-assign]
        for key in ("c", "b", "B", "space", "plus", "r"):
            await pilot.press(key)
        await pilot.pause()
        assert app.requested == loaded.options and app.speed == 1.0 and not app.paused
        assert len(said) == 6 and all(t.startswith("read-only: ") for t in said)   # each says so
        assert app.check_action("restart_engine", ()) is False
        assert f"read-only {saved}" in status(app)
        shown = read_screen(app)
        assert "prev c2" in shown and "now c3" in shown and "5 recompiles" in shown
        await pilot.press("s")                 # a screenshot of a loaded session still works
        assert [p.suffix for p in tmp_path.glob("infertop-*")] == [".svg"]


def _args(**overrides) -> argparse.Namespace:
    values = dict(model="t5-small", trace="chat", device="auto", opt=["compile=default"],
                  speed=2.0, buckets=None, requests=None, load=None, snapshot_dir="snaps")
    values.update(overrides)
    return argparse.Namespace(**values)


def test_launch_load_runs_the_app_read_only(saved, monkeypatch):
    ran: list[InfertopApp] = []
    monkeypatch.setattr(InfertopApp, "run", lambda self, **kw: ran.append(self))
    assert launch(_args(load=str(saved))) == 0
    (app,) = ran
    assert app.engine.read_only and app.engine.link is None and app.view.config_id == "c3"


def test_launch_live_builds_the_engine_from_args_and_stops_it(monkeypatch):

    engines: list[FakeEngine] = []

    class Config:
        def __init__(self, args):
            from probe.contract.options import parse_opts
            self.options, self.speed = parse_opts(args.opt), args.speed
            self.workload = None

    def client(config):
        engines.append(FakeEngine())
        return engines[-1]

    ran: list[InfertopApp] = []

    def run(self, **kw):
        ran.append(self)
        self.reader_stopped.set()

    monkeypatch.setattr(launch_module, "launch_from_args", Config)
    monkeypatch.setattr(launch_module, "EngineClient", client)
    monkeypatch.setattr(InfertopApp, "run", run)
    monkeypatch.setattr(launch_module, "READER_STOP_WAIT_S", 0.1)
    assert launch(_args()) == 0
    (app,) = ran
    assert app.requested.compile == "default" and app.speed == 2.0
    assert app.snapshot_dir == Path("snaps") and not app.engine.read_only
    assert engines[0].stopped
    assert Shutdown not in [type(c) for c in engines[0].commands()]  # stop() sends it itself


def test_a_loaded_continuous_session_shows_its_slots_and_device(tmp_path):
    from infertop.cli import main
    out = tmp_path / "continuous.json"
    assert main(["replay", "--model", "t5-tiny", "--trace", "chat", "--device", "cpu",
                 "--requests", "6", "--speed", "1000", "--max-output", "8",
                 "--opt", "batching=continuous", "--out", str(out)]) == 0
    loaded = saved_view(out)
    assert loaded.batch.mode == "continuous" and loaded.batch.max_batch == 8
    assert loaded.batch.occupancy_mean is not None and loaded.batch.occupancy_mean <= 8
    assert loaded.device_sample is not None and loaded.device_sample.kind == "CPU"
    assert loaded.kv.headroom_requests is not None      # free memory as it was saved


def test_a_loaded_session_keeps_its_saved_speed_and_queue_and_reads_saved(tmp_path, stages):
    """Issue 38: a session saved at ×0.125 with 195 queued read ×1 and queue 0 in --load, and
    its checklist said "not saved yet; press s" about the file it had just opened."""
    bucketing = stages["bucketing"]
    document = snapshot_document(
        session_at(bucketing.t_s, "c3"), environment={"device": "cpu"}, model={"name": "m"},
        trace={"name": "chat"},
        live={"replay": {"speed": 0.125, "queue_depth": 195, "dispatched": 400,
                         "offered_rps": 0.28}})
    path = write_json_atomic(tmp_path / "busy.json", document)
    loaded = saved_view(path)
    assert loaded.replay.speed == 0.125 and loaded.replay.queue_depth == 195
    assert loaded.replay.dispatched == 400 and loaded.replay.offered_rps == 0.28
    (documented,) = [i for i in loaded.checklist if i.item.startswith("results documented")]
    assert documented.status == "pass" and "busy.json" in documented.evidence
    from tui.widgets.status_bar import first_line
    line = first_line(loaded, "loaded", "", False, loaded.replay.speed, None, 160).plain
    assert "×0.125" in line and "queue 195" in line


@pytest.mark.parametrize("width", [80, 200])
def test_the_first_line_draws_while_the_rate_is_still_auto(width):
    """`make run` died at its first frame: the opening's rate is None (×auto) until it is
    calibrated, and the thinning check compared None with the clock's floor."""
    from tui.widgets.status_bar import first_line
    line = first_line(None, "starting", "trace azure-conv", False, None, None, width).plain
    assert "starting the engine" in line and "×auto" in line and len(line) <= width
