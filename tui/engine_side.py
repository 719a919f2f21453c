"""The dashboard's engine side: the engine link (probe/contract/engine_link.py, whatever its
transport) read on a worker thread of its own, what is sent down it, its facts, the engine's
session clock now, and the keys that only tell the engine something (the replay's pause and
speed, the window, steering a server, a restart)."""

from __future__ import annotations

import threading
from typing import Callable

from textual.message import Message
from textual.worker import Worker

from probe.contract.engine_link import (
    Ask,
    EngineFailed,
    EngineLink,
    LinkFacts,
    Pause,
    ResetWindow,
    Restart,
    Resume,
    SetSpeed,
    Steer,
)
from tui import derive
from tui.host import Host
from tui.messages import EngineHeard
from workloads.thinning import CLOCK_FLOOR, bounded_factor, factor_text

POLL_S = 0.2


class EngineSide:
    def __init__(self, host: Host, link: EngineLink | None, *, read_only: bool,
                 clock: Callable[[], float]) -> None:
        self.host = host
        self.link = link
        self.read_only = read_only or link is None
        self.clock = clock
        self.view_at = clock()                  # when the latest live view came
        self.speed_sent_at = float("-inf")
        facts = self.facts()
        # something useful from the first frame: the trace's shape while the engine loads
        self.trace_shape = "" if facts is None else facts.source
        # attached to a server: every change is a warm switch, the clients set the load
        self.on_server = facts is not None and facts.remote

    def facts(self) -> LinkFacts | None:
        return None if self.link is None else self.link.facts()

    def read(self, worker: Worker[None], post: Callable[[Message], object],
             stopping: threading.Event) -> None:
        """On the worker thread: open the link, poll it and `post` (the app's thread-safe
        post_message) what it hears as one message, until the worker is cancelled or the
        dashboard stops, so the event loop never waits on an engine."""
        assert self.link is not None
        lost = False
        try:
            self.link.open()
        except Exception as exc:  # a link that cannot open is shown, never a crash
            post(EngineHeard(EngineFailed(f"could not start: {type(exc).__name__}: {exc}")))
            lost = True
        while not (worker.is_cancelled or stopping.is_set()):
            try:
                heard = self.link.poll(POLL_S)
            except Exception as exc:  # a broken pipe or a bad message: say so once, go on
                if not lost:
                    post(EngineHeard(EngineFailed(f"lost the engine: {type(exc).__name__}: {exc}")))
                lost = True
                stopping.wait(POLL_S)
                continue
            lost = False
            if heard is not None:
                post(EngineHeard(heard))

    def send(self, ask: Ask) -> None:
        if self.link is not None:
            self.link.send(ask)

    def now_s(self) -> float:
        """The engine's session clock now, from the latest live view and the time since."""
        view = self.host.view
        return 0.0 if view is None else derive.engine_now_s(view, self.clock() - self.view_at)

    def log_line(self) -> str:
        facts = self.facts()
        return "engine log: none (no engine: a saved session)" if facts is None else facts.log

    def read_only_says_so(self) -> bool:
        """On a loaded session the keys that drive an engine cannot act: say so, once a press."""
        if self.read_only:
            self.host.say("read-only: this is a saved session (--load); keys that change the "
                          "engine do nothing here — replay it to try options")
        return self.read_only

    def another_engine_serves(self) -> None:
        """A restarted, cut-over or adopted engine starts with its launch's speed, unpaused:
        it is told the replay's speed and pause as the dashboard holds them."""
        host = self.host
        host.engine_state, host.engine_note = "starting", ""
        if host.speed is not None:
            self.send(SetSpeed(host.speed))
        if host.paused:
            self.send(Pause())

    def pause(self) -> None:
        if not self.read_only_says_so():
            self.host.paused = not self.host.paused
            self.send(Pause() if self.host.paused else Resume())

    def change_speed(self, factor: float) -> None:
        host = self.host
        if self.read_only_says_so():
            return
        if host.speed is None:
            host.say("the engine is still measuring its capacity to choose the rate")
            return
        # the calibration's range: below the clock's floor a share of the arrivals is kept
        speed = bounded_factor(host.speed * factor)
        if speed == host.speed:
            host.say(f"replay rate is already at its {'max' if factor > 1 else 'min'}imum, "
                     f"{factor_text(speed)}")
            return
        host.speed = speed
        self.speed_sent_at = self.clock()
        self.send(SetSpeed(speed))
        if speed < CLOCK_FLOOR:
            host.say(f"rate {factor_text(speed)}: the trace's clock goes no slower, so its "
                     f"arrivals are thinned, evenly, its shape kept")

    def reset_window(self) -> None:
        if not self.read_only_says_so():
            self.send(ResetWindow())
            self.host.say("window reset: figures now cover requests from here on")

    def steer(self) -> None:
        self.send(Steer())
        self.host.say("asked to steer: granted once no other dashboard steers")

    def restart(self) -> None:
        self.host.engine_state, self.host.engine_note = "starting", ""
        self.send(Restart())
