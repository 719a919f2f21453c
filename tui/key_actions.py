"""What each key does (the bindings are tui/keys.py): options staged and sent once the keys
settle, the warm switch on and off, pause and speed, the window, saving, the help, doctor and
reasons screens, giving up a compile, restarting a dead engine, quitting. On a saved session
(--load) the keys that drive an engine say so and do nothing."""

from __future__ import annotations

from probe.common.atomic import write_atomic
from probe.contract.engine_link import (
    GiveUp,
    Pause,
    ResetWindow,
    Restart,
    Resume,
    SaveSnapshot,
    SetOptions,
    SetSpeed,
    Steer,
    StopSide,
    WarmSwitch,
)
from tui import derive
from tui.dashboard_state import DashboardState
from tui.doctor_screen import DoctorScreen
from tui.help_screen import HelpScreen
from tui.keys import KEYS
from tui.live_ab import ab_report
from tui.pending_wait import GIVE_UP_KEY, fallback_label, fallback_options
from tui.reasons_screen import ReasonsScreen
from tui.snapshot_files import snapshot_folder_problem, snapshot_paths
from tui.warm_switch import SWITCH_KEY, SwitchUnderWay, wants_warm
from workloads.thinning import CLOCK_FLOOR, bounded_factor, factor_text

GIVE_UP_CONFIRM_S = 5.0     # x pressed again within this: go ahead although it loses work
NOT_ON_A_SERVER = frozenset({"pause", "speed"})


class KeyActions(DashboardState):
    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "restart_engine":
            return self.link is not None and not self.on_server and self.engine_state == "failed"
        if action == "steer":
            return self.on_server and not self.steering
        if self.on_server and action in NOT_ON_A_SERVER:
            return False        # its clients set the arrivals; the engine is the server's
        return True

    def _read_only_says_so(self) -> bool:
        """On a loaded session the keys that drive an engine cannot act: say so, once a press."""
        if self.read_only:
            self.say("read-only: this is a saved session (--load); keys that change the "
                     "engine do nothing here — replay it to try options")
        return self.read_only

    # -- options -----------------------------------------------------------------------------
    def action_cycle(self, key: str) -> None:
        """Staged: the new value shows as pending at once, and is sent once no key has been
        pressed for `apply_delay_s`, so cycling through values never serves the ones between."""
        if self._read_only_says_so():
            return
        self.requested = self.requested.cycled(key)
        if self._warm is not None and self._warm.cut_over_s is not None:
            self._warm = None               # the last warm switch's line gives way
            self._show_switch()
        if self._apply_timer is not None:
            self._apply_timer.stop()
            self._apply_timer = None
        if self._apply_delay_s <= 0:
            self._send_options()
            return
        self.options_sent_s = float("inf")
        self._apply_timer = self.set_timer(self._apply_delay_s, self._send_options,
                                           name="apply options")

    def _send_options(self) -> None:
        self._apply_timer = None
        if self._warming() and self.link is not None:
            self._send(StopSide())          # asked for something else: that warm-up is moot
            self._warm = None
            self._show_switch()
        if self.switch_kind == "warm" and self.link is not None and self.engine_state == "live" \
                and (wants_warm(self.requested, self.view) or self.on_server
                     and self.view is not None and self.requested != self.view.options):
            self._start_warm_switch()
            return
        self.options_sent_s = self._engine_now_s()
        self._send(SetOptions(self.requested))

    # -- the warm switch ---------------------------------------------------------------------
    def action_toggle_switch(self) -> None:
        if self._read_only_says_so():
            return
        if self.on_server:
            self.say("a server always switches warm: no request waits on a compile there")
            return
        self.switch_kind = "cold" if self.switch_kind == "warm" else "warm"
        if self.switch_kind == "warm":
            self.say(f"warm switch: an option change that compiles is prewarmed beside the "
                     f"serving config, then cut over ({SWITCH_KEY}: back to the cold switch)")
        else:
            self.say("cold switch: requests wait on a new config's compile (today's "
                     f"behaviour; {SWITCH_KEY}: warm switch)")
        self._show_switch()

    def _start_warm_switch(self) -> None:
        assert self.link is not None and self.view is not None
        self._warm = SwitchUnderWay(self.requested, self.view.config_id, self._engine_now_s())
        self.options_sent_s = self._engine_now_s()  # pending (asked) until the cut over
        self._send(WarmSwitch(self.requested))
        self._show_switch()
        self.say(f"warm switch to {self.requested.label()}: a second engine compiles it beside "
                 f"{self.view.config_id}, which serves until it is ready")

    # -- the replay --------------------------------------------------------------------------
    def action_pause(self) -> None:
        if self._read_only_says_so():
            return
        self.paused = not self.paused
        self._send(Pause() if self.paused else Resume())

    def action_speed(self, factor: float) -> None:
        if self._read_only_says_so():
            return
        if self.speed is None:
            self.say("the engine is still measuring its capacity to choose the rate")
            return
        # the calibration's range: below the clock's floor a share of the arrivals is kept
        speed = bounded_factor(self.speed * factor)
        if speed == self.speed:
            self.say(f"replay rate is already at its {'max' if factor > 1 else 'min'}imum, "
                     f"{factor_text(speed)}")
            return
        self.speed = speed
        self._speed_sent_at = self._clock()
        self._send(SetSpeed(speed))
        if speed < CLOCK_FLOOR:
            self.say(f"rate {factor_text(speed)}: the trace's clock goes no slower, so its "
                     f"arrivals are thinned, evenly, its shape kept")

    def action_reset_window(self) -> None:
        if self._read_only_says_so():
            return
        self._send(ResetWindow())
        self.say("window reset: figures now cover requests from here on")

    # -- saving ------------------------------------------------------------------------------
    def action_save_snapshot(self) -> None:
        problem = snapshot_folder_problem(self.snapshot_dir)
        if problem is None:
            try:
                self.snapshot_dir.mkdir(exist_ok=True)
                json_path, svg_path = snapshot_paths(self.snapshot_dir)
            except OSError as exc:
                problem = f"--snapshot-dir {self.snapshot_dir}: cannot write: {exc.strerror or exc}"
        if problem is not None:
            self.say(problem, severity="error")
            return
        if not self.read_only:     # the engine's, or (down, or an A/B) from its journal
            self._send(SaveSnapshot(str(json_path)))
        try:
            write_atomic(svg_path, [self.export_screenshot()])
        except OSError as exc:
            self.say(f"cannot write {svg_path}: {exc.strerror or exc}", severity="error")
        else:
            self.say(f"screenshot saved: {svg_path}")

    # -- screens -----------------------------------------------------------------------------
    def action_help(self) -> None:
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen(list(KEYS), self.log_line()))

    def action_doctor(self) -> None:
        if not isinstance(self.screen, DoctorScreen):
            view = self.view
            label = derive.config_label(view, view.config_id) if view is not None else ""
            self.push_screen(DoctorScreen(view.diagnosis if view else None,
                                          view.checklist if view else (), label,
                                          ab_report(self._ab) if self._ab else ""))

    def action_reasons(self) -> None:
        if not isinstance(self.screen, ReasonsScreen):
            view = self.view
            groups = getattr(view.diagnosis, "guard_groups", ()) if view else ()
            self.push_screen(ReasonsScreen(view.compile_events if view else (), groups,
                                           view.compile_ledger if view else ()))

    def log_line(self) -> str:
        facts = self.facts()
        return "engine log: none (no engine: a saved session)" if facts is None else facts.log

    # -- the engine --------------------------------------------------------------------------
    async def action_quit(self) -> None:
        """Quit at once, whatever the engine is doing: the reader thread ends at its next poll,
        and the engine is stopped (killed if it does not stop) once the app has exited."""
        self._stopping.set()
        self.exit()

    def action_give_up_compile(self) -> None:
        """Abandon the running compile: the previous config is asked for (the engine process
        keeps it for its restart) and the engine restarts; a compile holds the GIL in the
        engine and cannot be interrupted there safely."""
        if self._read_only_says_so() or self.link is None:
            return
        if self.on_server:
            self._give_up_switch()
            return
        view = self.view
        if view is None or view.compiling is None or self.engine_state != "live":
            self.say(f"no compile is running: {GIVE_UP_KEY} gives up a running compile")
            return
        if not self._give_up_confirmed(view):
            return
        _, options = fallback_options(view)
        label, who = fallback_label(view), view.compiling.request_id or "a prewarm"
        if self._apply_timer is not None:
            self._apply_timer.stop()
            self._apply_timer = None
        self.requested = options
        self.options_sent_s = None          # the restarted engine starts with these
        self.engine_state, self.engine_note = "starting", ""
        self._send(GiveUp(view.compiling, options))
        queued = view.replay.queue_depth
        carried = (f"the {queued} queued request(s) are carried across and served under it"
                   if queued else "no request is lost")
        self.say(f"gave up {view.config_id}'s compile ({who} waited): restarting the engine "
                 f"on {label}; {carried}; the session continues")

    def _give_up_switch(self) -> None:
        """On a server no request waits on a compile: `x` gives the switch under way up, and
        the serving config serves on."""
        switch = self._warm
        if switch is None or not self._warming():
            self.say(f"no switch is under way: {GIVE_UP_KEY} gives one up")
            return
        self._send(StopSide())
        self._warm = None
        if self.view is not None:
            self.requested = self.view.options
        self._show_switch()
        self.say(f"gave up the switch to {switch.target.label()}; {switch.serving_id} serves on")

    def _give_up_confirmed(self, view) -> bool:
        """With a session journal nothing is lost (the queue is carried across the restart).
        Without one the restarted engine starts a new session: the key asks first, saying
        what would be lost, and a second press within GIVE_UP_CONFIRM_S goes ahead."""
        facts = self.facts()
        if facts is None or facts.continues:
            return True
        now = self._clock()
        asked = getattr(self, "_give_up_asked_at", None)
        if asked is not None and now - asked <= GIVE_UP_CONFIRM_S:
            self._give_up_asked_at = None
            return True
        self._give_up_asked_at = now
        served = view.replay.completed
        self.say(f"{GIVE_UP_KEY} restarts the engine, and this session has no journal "
                 f"({facts.journal_problem or 'no session journal'}): the restarted engine "
                 f"would start a new session, losing the "
                 f"{served} request(s) served so far and the {view.replay.queue_depth} queued "
                 f"from it. Press {GIVE_UP_KEY} again within {GIVE_UP_CONFIRM_S:.0f} s to give "
                 f"up the compile anyway", severity="warning", timeout=GIVE_UP_CONFIRM_S)
        return False

    def action_steer(self) -> None:
        if self.check_action("steer", ()):
            self._send(Steer())
            self.say("asked to steer: granted once no other dashboard steers")

    def action_restart_engine(self) -> None:
        if not self.check_action("restart_engine", ()):
            return
        self.engine_state, self.engine_note = "starting", ""
        self._send(Restart())
