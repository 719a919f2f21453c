"""Option changes (the option keys, tui/keys.py): staged, the new value shown as pending at once
and sent once no key has been pressed for `apply_delay_s`, so cycling through values never
serves the ones between; then sent as what the change needs: an A/B after `V`
(tui/live_ab_run.py), a warm switch (tui/warm_switch_run.py) or SetOptions. And `x`, which
gives up the running compile for a config that needs none."""

from __future__ import annotations

from textual.timer import Timer

from probe.contract.engine_link import GiveUp, SetOptions
from probe.contract.live import LiveView
from tui.engine_side import EngineSide
from tui.host import Host
from tui.live_ab_run import LiveABRun
from tui.pending_wait import GIVE_UP_KEY, fallback_label, fallback_options
from tui.warm_switch import wants_warm
from tui.warm_switch_run import WarmSwitchRun

APPLY_DELAY_S = 1.0     # toggles are sent once no key has been pressed for this long
GIVE_UP_CONFIRM_S = 5.0     # x pressed again within this: go ahead although it loses work


class OptionChanges:
    def __init__(self, host: Host, engine: EngineSide, warm: WarmSwitchRun, ab: LiveABRun,
                 apply_delay_s: float = APPLY_DELAY_S) -> None:
        self.host = host
        self.engine = engine
        self.warm = warm
        self.ab = ab
        self.apply_delay_s = apply_delay_s
        self._timer: Timer | None = None
        self._give_up_asked_at: float | None = None

    def cycle(self, key: str) -> None:
        host = self.host
        if self.ab.running is not None and not self.engine.read_only:
            host.say("an A/B is running: Enter adopts B, Esc keeps A; then options change "
                     "again", severity="warning")
            return
        if self.engine.read_only_says_so():
            return
        host.requested = host.requested.cycled(key)
        self.warm.forget(cut_over=True)
        self._stop_timer()
        if self.apply_delay_s <= 0:
            self.apply()
            return
        host.options_sent_s = float("inf")
        self._timer = host.set_timer(self.apply_delay_s, self.apply, name="apply options")

    def _stop_timer(self) -> None:
        if self._timer is not None:
            self._timer.stop()
            self._timer = None

    def apply(self) -> None:
        """The change staged, sent as what it needs."""
        self._timer = None
        host, view = self.host, self.host.view
        if self.ab.mode and view is not None and host.requested != view.options:
            self.ab.start(host.requested)
            host.requested = view.options   # A serves on; B's options are the A/B line's
            return
        self.warm.stop()
        if host.switch_kind == "warm" and self.engine.link is not None \
                and host.engine_state == "live" \
                and (wants_warm(host.requested, view) or self.engine.on_server
                     and view is not None and host.requested != view.options):
            self.warm.start()
            return
        host.options_sent_s = self.engine.now_s()
        self.engine.send(SetOptions(host.requested))

    def give_up_compile(self) -> None:
        """Abandon the running compile: the previous config is asked for (the engine process
        keeps it for its restart) and the engine restarts; a compile holds the GIL in the
        engine and cannot be interrupted there safely."""
        host = self.host
        if self.engine.read_only_says_so() or self.engine.link is None:
            return
        if self.engine.on_server:
            self.warm.give_up()
            return
        view = host.view
        if view is None or view.compiling is None or host.engine_state != "live":
            host.say(f"no compile is running: {GIVE_UP_KEY} gives up a running compile")
            return
        if not self._give_up_confirmed(view):
            return
        _, options = fallback_options(view)
        label, who = fallback_label(view), view.compiling.request_id or "a prewarm"
        self._stop_timer()
        host.requested = options
        host.options_sent_s = None          # the restarted engine starts with these
        host.engine_state, host.engine_note = "starting", ""
        self.engine.send(GiveUp(view.compiling, options))
        queued = view.replay.queue_depth
        carried = (f"the {queued} queued request(s) are carried across and served under it"
                   if queued else "no request is lost")
        host.say(f"gave up {view.config_id}'s compile ({who} waited): restarting the engine "
                 f"on {label}; {carried}; the session continues")

    def _give_up_confirmed(self, view: LiveView) -> bool:
        """With a session journal nothing is lost (the queue is carried across the restart).
        Without one the restarted engine starts a new session: the key asks first, saying
        what would be lost, and a second press within GIVE_UP_CONFIRM_S goes ahead."""
        facts = self.engine.facts()
        if facts is None or facts.continues:
            return True
        now, asked = self.engine.clock(), self._give_up_asked_at
        if asked is not None and now - asked <= GIVE_UP_CONFIRM_S:
            self._give_up_asked_at = None
            return True
        self._give_up_asked_at = now
        served = view.replay.completed
        self.host.say(f"{GIVE_UP_KEY} restarts the engine, and this session has no journal "
                      f"({facts.journal_problem or 'no session journal'}): the restarted "
                      f"engine would start a new session, losing the {served} request(s) "
                      f"served so far and the {view.replay.queue_depth} queued from it. Press "
                      f"{GIVE_UP_KEY} again within {GIVE_UP_CONFIRM_S:.0f} s to give up the "
                      f"compile anyway", severity="warning", timeout=GIVE_UP_CONFIRM_S)
        return False
