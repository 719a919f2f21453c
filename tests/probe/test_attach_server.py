"""A dashboard attached to a running `infertop serve` (issue 53): one t5-tiny
server (continuous batching, bucketing, eager backend, an API key) on a free loopback port for
the whole file, its requests sent by the official `openai` client, spoken to through
ServerLink. The links hear the served requests in their live views; the first steers and the
second watches (its asks refused); a SetOptions compiles the new config beside the serving one
and cuts over with no request waiting on that compile; a live A/B splits the arrivals; the
dashboard itself (under Pilot) fills, switches with no stall and leaves the server serving on
`q`; a server stopped is said once, the dashboard keeping what it showed."""

from __future__ import annotations

import json
import signal
import threading
import time
import urllib.request
from pathlib import Path

import openai
import pytest

from infertop import cli
from infertop.commands.attach import server_url
from probe.contract.engine_link import (
    ABEnd,
    ABEnded,
    ABSplit,
    ABStart,
    ArmLive,
    ArmStarted,
    CutOverDone,
    EngineFailed,
    EngineLive,
    Role,
    SaveSnapshot,
    SetOptions,
    SnapshotSaved,
    Steer,
    StopSide,
    WarmFailed,
)
from probe.contract.options import OptConfig
from probe.server.attach.link import ServerLink
from tests.probe.serve_child import serving

MODEL, KEY = "t5-tiny", "attach-key"
SERVED = OptConfig(bucketing="on", batching="continuous")
COMPILED = SERVED.with_option("compile", "default")     # dynamo traces (eager backend)
pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    folder = tmp_path_factory.mktemp("attach")
    with serving(["--model", MODEL, "--device", "cpu", "--opt", "batching=continuous",
                  "--opt", "bucketing=on", "--compile-backend", "eager", "--max-batch", "2",
                  "--max-input", "64", "--max-output", "32", "--drift-every", "0",
                  "--threads", "1", "--api-key", KEY,
                  "--out", str(folder / "served.json")]) as (child, port):
        yield child, f"http://127.0.0.1:{port}", folder


class Load:
    """Requests sent back to back by the openai client, on a thread, until stopped."""

    def __init__(self, url: str, prefix: str) -> None:
        self.client = openai.OpenAI(base_url=url + "/v1", api_key=KEY, max_retries=0,
                                    timeout=120)
        self.prefix, self.done = prefix, []
        self.error: openai.OpenAIError | None = None
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            while not self.stop.is_set():
                request_id = f"{self.prefix}{len(self.done)}"
                self.client.completions.create(
                    model=MODEL, prompt="translate English to German: the house is small",
                    max_tokens=6, extra_headers={"X-Request-Id": request_id})
                self.done.append(request_id)
        except openai.OpenAIError as exc:
            self.error = exc

    def end(self) -> list[str]:
        """The ids served, every one answered 200 (none lost, none refused)."""
        self.stop.set()
        self.thread.join(timeout=60)
        assert self.error is None, self.error
        return self.done


async def until(pilot, what, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while not what():
        assert time.monotonic() < deadline, "not seen in time"
        await pilot.pause(0.1)


def dashboard(url: str, folder: Path):
    """The dashboard over a ServerLink, as `infertop attach` builds it."""
    from tui.app import InfertopApp

    link = ServerLink(url, KEY)
    link.open()
    view = link.first_view(30)
    assert view is not None
    return InfertopApp(link, initial=view, options=view.options, snapshot_dir=folder,
                       speed=None), link


def hear(link: ServerLink, until, seconds: float = 60):
    """What the link hears until `until(heard)` is true (returned last), or fail."""
    heard, deadline = [], time.monotonic() + seconds
    while time.monotonic() < deadline:
        event = link.poll(0.2)
        if event is not None:
            heard.append(event)
            if until(event):
                return heard
    pytest.fail(f"not heard within {seconds} s; heard {[type(h).__name__ for h in heard]}")


@pytest.fixture(scope="module")
def links(server):
    _, url, _ = server
    first, second = ServerLink(url, KEY), ServerLink(url, KEY)
    first.open()
    hear(first, lambda h: isinstance(h, Role))
    second.open()
    yield first, second
    for link in (first, second):
        link.close()


def test_the_first_link_steers_and_hears_the_served_requests(server, links):
    first, second = links
    assert first.steering and first.facts().remote
    role = hear(second, lambda h: isinstance(h, Role))[-1]
    assert not role.steering and "dashboard 1 steers" in role.text
    load = Load(server[1], "live-")
    while len(load.done) < 3:
        time.sleep(0.05)
    sent = set(load.end())
    live = hear(first, lambda h: isinstance(h, EngineLive)
                and sent <= {r.id for r in h.view.recent})[-1]
    assert live.view.options.compile == "off" and live.view.model == MODEL


def test_a_watchers_ask_is_refused_and_a_switch_serves_no_request_a_compile(server, links):
    _, url, folder = server
    first, second = links
    second.send(SetOptions(COMPILED))
    refused = hear(second, lambda h: isinstance(h, Role))[-1]
    assert not refused.steering and "refused" in refused.text
    load = Load(url, "switch-")
    first.send(SetOptions(COMPILED))
    heard = hear(first, lambda h: isinstance(h, (CutOverDone, WarmFailed)), 180)
    assert isinstance(heard[-1], CutOverDone), heard[-1]
    while not any(isinstance(h, EngineLive) and h.view.options.compile == "default"
               for h in heard):
        heard += hear(first, lambda h: isinstance(h, EngineLive))
    load.end()
    path = str(folder / "so-far.json")
    first.send(SaveSnapshot(path))
    hear(first, lambda h: isinstance(h, SnapshotSaved) and h.path == path)
    saved = json.loads(Path(path).read_text())
    records = saved["requests"]
    side = [e for e in saved["compile_events"] if e.get("beside")]
    assert side, "the side compile is charged to the new config, marked beside the old one"
    compiled_id = side[0]["config_id"]
    during = [r for r in records
              if r["end_s"] >= min(e["start_s"] for e in side) and r["config_id"] != compiled_id]
    assert during, "requests were served while the side engine compiled"
    assert all(r["compile_stall_ms"] == 0 for r in records)
    assert any(r["config_id"] == compiled_id for r in records)
    assert any("cut over" in n["text"] for n in saved["notices"])
    assert not any(isinstance(h, WarmFailed) for h in hear(second, lambda h: isinstance(
        h, CutOverDone)))      # every dashboard hears the switch
    watched = str(folder / "watched.json")       # a watcher saves too: it only reads
    second.send(SaveSnapshot(watched))
    hear(second, lambda h: isinstance(h, SnapshotSaved) and h.path == watched)
    assert json.loads(Path(watched).read_text())["requests"]


def test_a_watcher_steers_once_the_steering_link_leaves(links):
    first, second = links
    first.close()
    role = hear(second, lambda h: isinstance(h, Role) and "nobody steers" in h.text)[-1]
    assert not role.steering
    second.send(Steer())
    assert hear(second, lambda h: isinstance(h, Role))[-1].steering


def test_a_switch_given_up_leaves_the_serving_config_untouched(links):
    _, second = links          # it steers now
    second.send(SetOptions(SERVED))
    second.send(StopSide())     # x: while the side engine still loads
    given_up = hear(second, lambda h: isinstance(h, (WarmFailed, CutOverDone)))[-1]
    assert isinstance(given_up, WarmFailed) and "given up" in given_up.error
    view = hear(second, lambda h: isinstance(h, EngineLive))[-1].view
    assert view.options.compile == "default"
    assert any("given up" in n.text for n in view.notices)     # the journal keeps it


def test_a_live_ab_splits_real_arrivals_and_adopting_b_serves_on(server, links):
    _, second = links          # it steers now
    load = Load(server[1], "ab-")
    second.send(ABStart(SERVED))
    heard = hear(second, lambda h: isinstance(h, (ABSplit, WarmFailed)), 120)
    assert isinstance(heard[-1], ABSplit), heard[-1]
    started = next(h for h in heard if isinstance(h, ArmStarted))
    hear(second, lambda h: isinstance(h, ArmLive) and h.view.config_id == started.config_id
         and any(r.id.startswith("ab-") and r.config_id == started.config_id
                 for r in h.view.recent))
    second.send(ABEnd(adopt=True))
    heard = hear(second, lambda h: isinstance(h, ABEnded), 120)
    assert heard[-1].how == "adopt", heard[-1]
    served = load.end()
    view = hear(second, lambda h: isinstance(h, EngineLive) and h.view.options.compile == "off"
                and served[-1] in {r.id for r in h.view.recent})[-1].view
    by_config = {r.config_id for r in view.recent if r.id.startswith("ab-")}
    assert started.config_id in by_config and len(by_config) == 2   # both arms served


async def test_the_dashboard_attached_fills_switches_with_no_stall_and_q_leaves_it_serving(
        server, links, tmp_path):
    _, url, _ = server
    links[1].close()            # nobody steers now: the dashboard will
    app, link = dashboard(url, tmp_path)
    assert app.view is not None and app.view.options.compile == "off"
    load = Load(url, "tui-")

    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: app.view is not None and any(
            r.id.startswith("tui-") for r in app.view.recent))
        assert app.steering and app.engine_state == "live"
        await pilot.press("c")          # compile=default: compiled beside, then cut over
        await until(pilot, lambda: app.view.options.compile == "default", 180)
        served = len(load.done)
        await until(pilot, lambda: len(load.done) > served + 3)
        await pilot.pause(1.0)
        switched = [r for r in app.view.recent if r.id.startswith("tui-")]
        await pilot.press("q")
    load.end()
    link.close()
    assert len({r.config_id for r in switched}) == 2, "requests of both configs are shown"
    assert all(r.compile_stall_ms == 0 for r in switched)
    with urllib.request.urlopen(url + "/health", timeout=5) as response:
        assert json.load(response)["status"] == "ready"     # q left the server serving


@pytest.mark.parametrize("given, says", [
    ("ftp://host", "expected http://HOST[:PORT]"),
    ("http://127.0.0.1:8000/v1/models", "expected http://HOST[:PORT]"),
    ("http://host:99999", "Port out of range"),
    ("127.0.0.1:1", "nothing answers there"),
])
def test_attach_refuses_a_bad_url_in_one_line(given, says, capsys):
    assert cli.main(["attach", given]) == 2
    err = capsys.readouterr().err
    assert says in err and err.count("\n") == 1


def test_attach_refuses_a_wrong_key_before_the_dashboard_opens(server, capsys):
    assert server_url(server[1] + "/v1/") == server[1]
    assert cli.main(["attach", server[1] + "/v1", "--api-key", "nope"]) == 2
    assert "--api-key: the server at" in capsys.readouterr().err


async def test_a_wrong_key_is_heard_and_a_stopped_server_said_with_what_was_shown_kept(
        server, tmp_path):
    child, url, _ = server
    wrong = ServerLink(url, "not-the-key")
    wrong.open()
    failed = hear(wrong, lambda h: isinstance(h, EngineFailed))[-1]
    assert "API key" in failed.error
    wrong.close()
    app, link = dashboard(url, tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: app.engine_state == "live")
        shown = app.view
        child.send_signal(signal.SIGTERM)
        assert child.wait(timeout=120) == 128 + signal.SIGTERM
        await until(pilot, lambda: app.engine_state == "failed", 30)
        assert "stopped answering" in app.engine_note
        assert app.view is not None and shown is not None
        # no request was sent since: what it showed is what it still shows
        assert {r.id for r in shown.recent} <= {r.id for r in app.view.recent}
        await pilot.press("q")
    assert link.poll(1.0) is None       # said once
    link.close()
