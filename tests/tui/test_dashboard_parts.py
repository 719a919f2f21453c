"""The dashboard's parts alone, with no Textual app (no Pilot): a fake host (tui/host.py)
holding the reactives as plain attributes, and a link that records what is sent. The option
changes are staged and sent once, a warm switch starts only where the change wants one, an A/B
refuses while a switch warms, and the engine's events go where the table says."""

from __future__ import annotations

from dataclasses import replace

import pytest

from probe.contract.engine_link import (
    ABEnd,
    ABSplit,
    ABStart,
    ArmStarted,
    Ask,
    CutOverDone,
    EngineLive,
    LinkFacts,
    Pause,
    Role,
    SetOptions,
    SetSpeed,
    StopSide,
    WarmFailed,
    WarmSwitch,
)
from probe.contract.live import LiveView
from probe.contract.options import OptConfig
from tests.tui.conftest import ManualTimer
from tui.engine_events import EngineEvents
from tui.engine_side import EngineSide
from tui.live_ab_run import LiveABRun
from tui.messages import ABCompared
from tui.option_changes import OptionChanges
from tui.warm_switch_run import WarmSwitchRun


class RecordingLink:
    def __init__(self, **facts) -> None:
        self.sent: list[Ask] = []
        self._facts = LinkFacts("a trace", "engine log: here", **facts)

    def send(self, ask: Ask) -> None:
        self.sent.append(ask)

    def facts(self) -> LinkFacts:
        return self._facts

    def open(self) -> None: ...

    def poll(self, timeout: float) -> None: ...

    def close(self) -> None: ...


class FakeHost:
    """The app as its parts see it: reactives as attributes, what is said, timers by hand."""

    def __init__(self, view: LiveView) -> None:
        self.view: LiveView | None = view
        self.requested = view.options
        self.options_sent_s: float | None = None
        self.speed: float | None = 1.0
        self.paused = False
        self.engine_state = "live"
        self.engine_note = ""
        self.switch_kind = "cold"
        self.steering = True
        self.role_text = ""
        self.said: list[tuple[str, str]] = []
        self.timers: list[ManualTimer] = []
        self.posted: list[object] = []
        self.switch_shown = 0

    def say(self, message, *, severity="information", timeout=None) -> None:
        self.said.append((message, severity))

    def show_switch(self) -> None:
        self.switch_shown += 1

    def set_timer(self, delay, callback, *, name):
        assert name == "apply options"
        self.timers.append(ManualTimer(delay, callback))
        return self.timers[-1]

    def run_worker(self, work, **_) -> None:
        work()                      # the thread's work, at once

    def post_message(self, message) -> bool:
        self.posted.append(message)
        return True

    def refresh_bindings(self) -> None: ...


class Parts:
    def __init__(self, view: LiveView, *, apply_delay_s: float = 1.0, read_only=False,
                 **facts) -> None:
        self.host = FakeHost(view)
        self.link = RecordingLink(**facts)
        self.engine = EngineSide(self.host, self.link, read_only=read_only, clock=lambda: 0.0)
        self.warm = WarmSwitchRun(self.host, self.engine)
        self.ab = LiveABRun(self.host, self.engine, self.warm)
        self.changes = OptionChanges(self.host, self.engine, self.warm, self.ab, apply_delay_s)
        self.events = EngineEvents(self.host, self.engine, self.warm, self.ab)

    def sent(self, kind: type) -> list:
        return [ask for ask in self.link.sent if isinstance(ask, kind)]


@pytest.fixture
def baseline(stages) -> LiveView:
    return stages["baseline"]


def test_option_changes_are_staged_and_sent_once_the_keys_settle(baseline):
    parts = Parts(baseline)
    parts.changes.cycle("compile")
    parts.changes.cycle("compile")          # through a value, never served
    assert parts.link.sent == [] and parts.host.options_sent_s == float("inf")
    first, second = parts.host.timers
    assert first.stopped and not second.stopped and second.delay_s == 1.0
    second.fire()
    assert parts.link.sent == [SetOptions(parts.host.requested)]
    assert parts.host.requested == baseline.options.cycled("compile").cycled("compile")
    assert parts.host.options_sent_s == baseline.t_s


def test_a_read_only_session_sends_nothing_and_says_so_each_press(baseline):
    parts = Parts(baseline, read_only=True)
    parts.changes.cycle("compile")
    parts.engine.pause()
    parts.warm.toggle()
    assert parts.link.sent == [] and parts.host.timers == []
    assert [said.startswith("read-only: ") for said, _ in parts.host.said] == [True] * 3
    assert parts.host.requested == baseline.options and not parts.host.paused


def test_a_warm_switch_starts_only_where_the_change_wants_one(baseline):
    parts = Parts(baseline, apply_delay_s=0)
    parts.host.switch_kind = "warm"
    parts.changes.cycle("bucketing")        # eager: it switches between requests anyway
    assert parts.sent(SetOptions) and not parts.sent(WarmSwitch) and not parts.warm.warming
    parts.changes.cycle("compile")          # compiled: prewarmed beside the served config
    assert parts.sent(WarmSwitch) == [WarmSwitch(parts.host.requested)]
    assert len(parts.sent(SetOptions)) == 1 and parts.warm.warming
    assert parts.warm.under_way.serving_id == baseline.config_id


def test_a_cold_switch_never_warms(baseline):
    parts = Parts(baseline, apply_delay_s=0)
    parts.changes.cycle("compile")
    assert parts.sent(SetOptions) and not parts.sent(WarmSwitch) and parts.warm.under_way is None


def test_another_change_stops_the_switch_warming_and_the_cut_over_moves_on(baseline):
    parts = Parts(baseline, apply_delay_s=0)
    parts.host.switch_kind = "warm"
    parts.changes.cycle("compile")
    parts.changes.cycle("compile")          # a third value: the first warm-up is moot
    assert parts.sent(StopSide) == [StopSide()] and len(parts.sent(WarmSwitch)) == 2
    parts.events.heard(CutOverDone(shapes=4, seconds=30.0))
    assert parts.warm.under_way.cut_over_s is not None and not parts.warm.warming
    assert parts.host.options_sent_s is None and parts.host.engine_state == "starting"
    assert parts.sent(SetSpeed) == [SetSpeed(1.0)]      # the new engine is told the speed
    assert "cut over, no request waited" in parts.host.said[-1][0]


def test_a_failed_warm_switch_serves_on_with_the_served_options(baseline):
    parts = Parts(baseline, apply_delay_s=0)
    parts.host.switch_kind = "warm"
    parts.changes.cycle("compile")
    parts.events.heard(WarmFailed("out of memory"))
    assert parts.warm.under_way is None and parts.host.requested == baseline.options
    assert parts.host.said[-1] == (f"warm switch to {OptConfig(compile='default').label()} "
                                   f"failed: out of memory; c1 serves on", "error")


def test_an_ab_refuses_while_a_switch_warms(baseline):
    parts = Parts(baseline, apply_delay_s=0)
    parts.host.switch_kind = "warm"
    parts.changes.cycle("compile")
    parts.ab.start(OptConfig(bucketing="on"))
    assert parts.ab.running is None and not parts.sent(ABStart)
    assert parts.host.said[-1] == ("no A/B: a warm switch is under way", "warning")



def test_an_ab_after_a_cut_over_takes_the_switch_line(baseline):
    """A finished switch's line stays until something else happens on the line: an A/B
    started from `v` (no option key between) replaces it, so the line never shows the old
    cut over while another config serves (seen on a server walk, after Enter adopted B)."""
    parts = Parts(baseline, apply_delay_s=0)
    parts.host.switch_kind = "warm"
    parts.changes.cycle("compile")
    parts.events.heard(CutOverDone(shapes=1, seconds=3.0))
    assert parts.warm.under_way is not None
    parts.host.engine_state = "live"
    parts.ab.start(OptConfig(bucketing="on"))
    assert parts.ab.running is not None and parts.warm.under_way is None

def test_after_v_the_change_runs_as_an_ab_and_a_serves_on(baseline):
    parts = Parts(baseline, apply_delay_s=0)
    parts.ab.toggle_mode()
    parts.changes.cycle("bucketing")
    target = baseline.options.cycled("bucketing")
    assert parts.sent(ABStart) == [ABStart(target)] and not parts.sent(SetOptions)
    assert parts.host.requested == baseline.options and not parts.ab.mode
    parts.changes.cycle("compile")           # no change while it runs
    assert parts.host.said[-1][1] == "warning" and len(parts.link.sent) == 1


def test_the_ab_moves_on_with_the_engines_events_and_ends_on_enter(baseline):
    parts = Parts(baseline, apply_delay_s=0)
    parts.ab.start(OptConfig(bucketing="on"))
    parts.ab.adopt()                        # still warming: not yet
    assert not parts.sent(ABEnd)
    parts.events.heard(ArmStarted("c2", OptConfig(bucketing="on")))
    parts.events.heard(ABSplit(shapes=4, seconds=20.0))
    assert parts.ab.running.b_id == "c2" and parts.ab.running.split
    later = replace(baseline, t_s=baseline.t_s + 1)
    shown = parts.host.switch_shown
    parts.events.heard(EngineLive(later))   # arm A's view: the line is drawn again
    assert parts.host.view is later and parts.ab.running is not None
    assert parts.host.switch_shown > shown
    parts.ab.adopt()
    assert parts.sent(ABEnd) == [ABEnd(adopt=True)]


def test_a_comparison_comes_back_only_for_the_ab_it_was_asked_for(baseline):
    parts = Parts(baseline)
    parts.ab.start(OptConfig(bucketing="on"))
    asked_s = parts.ab.running.asked_s
    parts.ab.compared(ABCompared(asked_s + 1, None, (3, 3)))    # another A/B's: dropped
    assert parts.ab.running.compared_n == (0, 0)
    parts.ab.compared(ABCompared(asked_s, None, (3, 3)))
    assert parts.ab.running.compared_n == (3, 3)


def test_a_watcher_follows_what_is_served_and_drops_its_switch(baseline):
    parts = Parts(baseline, apply_delay_s=0, remote=True)
    assert parts.engine.on_server
    parts.host.switch_kind = "warm"
    parts.changes.cycle("bucketing")        # on a server any change is a warm switch
    assert parts.warm.warming and not parts.sent(SetOptions)
    parts.events.heard(Role(False, "dashboard 1 steers"))
    assert parts.warm.under_way is None and not parts.host.steering
    assert parts.host.requested == baseline.options
    assert parts.host.said[-1] == ("dashboard 1 steers", "warning")


def test_a_restarted_engine_is_told_the_pause(baseline):
    parts = Parts(baseline)
    parts.engine.pause()
    parts.engine.another_engine_serves()
    assert parts.link.sent == [Pause(), SetSpeed(1.0), Pause()]
    assert parts.host.engine_state == "starting"
