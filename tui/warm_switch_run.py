"""The warm switch as the dashboard runs it (tui/warm_switch.py says what it is): `S` turns it
on and off, a change that wants it starts a side engine (the link's WarmSwitch ask), and the
engine's word on it (progress, failure, the cut over) moves it on; `x` on a server, or another
change, stops it."""

from __future__ import annotations

from dataclasses import replace

from probe.contract.engine_link import CutOverDone, StopSide, WarmFailed, WarmProgress, WarmSwitch
from tui.engine_side import EngineSide
from tui.host import Host
from tui.pending_wait import GIVE_UP_KEY
from tui.warm_switch import SWITCH_KEY, SwitchUnderWay, warm_line


class WarmSwitchRun:
    def __init__(self, host: Host, engine: EngineSide) -> None:
        self.host = host
        self.engine = engine
        self.under_way: SwitchUnderWay | None = None

    @property
    def warming(self) -> bool:
        return self.under_way is not None and self.under_way.cut_over_s is None

    def toggle(self) -> None:
        host = self.host
        if self.engine.read_only_says_so():
            return
        if self.engine.on_server:
            host.say("a server always switches warm: no request waits on a compile there")
            return
        host.switch_kind = "cold" if host.switch_kind == "warm" else "warm"
        if host.switch_kind == "warm":
            host.say(f"warm switch: an option change that compiles is prewarmed beside the "
                     f"serving config, then cut over ({SWITCH_KEY}: back to the cold switch)")
        else:
            host.say("cold switch: requests wait on a new config's compile (today's "
                     f"behaviour; {SWITCH_KEY}: warm switch)")
        host.show_switch()

    def start(self) -> None:
        """A side engine on the options asked for, beside the config served."""
        host, view = self.host, self.host.view
        assert self.engine.link is not None and view is not None
        self.under_way = SwitchUnderWay(host.requested, view.config_id, self.engine.now_s())
        host.options_sent_s = self.engine.now_s()  # pending (asked) until the cut over
        self.engine.send(WarmSwitch(host.requested))
        host.show_switch()
        host.say(f"warm switch to {host.requested.label()}: a second engine compiles it beside "
                 f"{view.config_id}, which serves until it is ready")

    def stop(self) -> None:
        """The side engine warming, stopped (something else was asked for: it is moot)."""
        if self.warming and self.engine.link is not None:
            self.engine.send(StopSide())
            self.under_way = None
            self.host.show_switch()

    def give_up(self) -> None:
        """On a server no request waits on a compile: `x` gives the switch under way up, and
        the serving config serves on."""
        switch, host = self.under_way, self.host
        if switch is None or not self.warming:
            host.say(f"no switch is under way: {GIVE_UP_KEY} gives one up")
            return
        self.stop()
        if host.view is not None:
            host.requested = host.view.options
        host.say(f"gave up the switch to {switch.target.label()}; {switch.serving_id} serves on")

    def forget(self, *, cut_over: bool) -> None:
        """The last switch's line gives way (`cut_over`: only one that cut over), or a restart
        stopped the side engine too (one warming)."""
        if self.under_way is not None and (self.under_way.cut_over_s is not None) == cut_over:
            self.under_way = None
            self.host.show_switch()

    def heard(self, event: WarmProgress | WarmFailed | CutOverDone) -> None:
        switch, host = self.under_way, self.host
        if switch is None:
            return
        if isinstance(event, WarmProgress):
            self.under_way = replace(switch, shapes=event.shapes)
        elif isinstance(event, WarmFailed):
            self.under_way = None
            if host.view is not None:
                host.requested = host.view.options
            host.say(f"warm switch to {switch.target.label()} failed: {event.error}; "
                     f"{switch.serving_id} serves on", severity="error")
        else:
            done = switch.done(self.engine.now_s(), event.seconds, event.shapes, host.view)
            self.under_way = done
            host.options_sent_s = None      # the side engine started with these options
            self.engine.another_engine_serves()
            host.say(warm_line(done, host.view, self.engine.now_s()))
        host.show_switch()
