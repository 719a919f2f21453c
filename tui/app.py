"""The infertop dashboard: one immutable LiveView in an app-level reactive, panels bound to
it (tui/dashboard_layout.py), keys (tui/keys.py) that send commands to an engine running in
another process; the event loop never waits on the engine.

The app holds the reactives and hands each key and each message to one of its parts, each on
the narrow interface of tui/host.py: the engine side (tui/engine_side.py: the link, read on a
worker thread), the option changes (tui/option_changes.py), the warm switch
(tui/warm_switch_run.py), the live A/B (tui/live_ab_run.py) and what the engine's events do
(tui/engine_events.py)."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Callable

from textual import on, work
from textual.app import App, ComposeResult
from textual.notifications import SeverityLevel
from textual.reactive import reactive
from textual.worker import Worker, WorkerState, get_current_worker

from probe.common.atomic import write_atomic
from probe.contract.engine_link import EngineLink, SaveSnapshot
from probe.contract.live import LiveView
from probe.contract.options import OptConfig
from tui import derive, terminal_watch
from tui.dashboard_layout import dashboard_widgets
from tui.doctor_screen import DoctorScreen
from tui.engine_events import EngineEvents
from tui.engine_side import EngineSide
from tui.fit_line import Part, part
from tui.help_screen import HelpScreen
from tui.keys import KEYS
from tui.live_ab import ab_line, ab_report
from tui.live_ab_run import LiveABRun
from tui.messages import ABCompared, EngineHeard
from tui.option_changes import APPLY_DELAY_S, OptionChanges
from tui.reasons_screen import ReasonsScreen
from tui.snapshot_files import snapshot_folder_problem, snapshot_paths
from tui.warm_switch import switch_on_parts, warm_parts
from tui.warm_switch_run import WarmSwitchRun

NOT_ON_A_SERVER = frozenset({"pause", "speed"})


class InfertopApp(App[int]):
    CSS_PATH = "dashboard.tcss"
    TITLE = "infertop"
    ENABLE_COMMAND_PALETTE = False
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (100, "-wide")]
    VERTICAL_BREAKPOINTS = [(0, "-short"), (34, "-tall")]
    BINDINGS = [*KEYS]

    view: reactive[LiveView | None] = reactive(None, init=False)
    requested: reactive[OptConfig] = reactive(OptConfig, init=False)
    # Session time the engine was sent `requested`; inf while it waits for keys to settle.
    options_sent_s: reactive[float | None] = reactive(None, init=False)
    # None until the engine picked the rate (half its measured capacity); then the engine's
    speed: reactive[float | None] = reactive(None, init=False)
    paused: reactive[bool] = reactive(False, init=False)
    engine_state: reactive[str] = reactive("starting", init=False)
    engine_note: reactive[str] = reactive("", init=False)
    # (not `switch_mode`: that is Textual's App.switch_mode, its screen modes' API)
    switch_kind: reactive[str] = reactive("cold", init=False)    # or "warm"
    # the warm switch's line, or the A/B's parts (shortened by meaning: tui/fit_line.py)
    switch_note: reactive[str | tuple[Part, ...]] = reactive("", init=False)
    warming_beside: reactive[str] = reactive("", init=False)     # serving id while a side warms

    def __init__(self, link: EngineLink | None, *, initial: LiveView | None = None,
                 options: OptConfig, snapshot_dir: Path, speed: float | None,
                 read_only: bool = False,
                 source: str = "", clock: Callable[[], float] = time.monotonic,
                 apply_delay_s: float = APPLY_DELAY_S) -> None:
        super().__init__()
        self.snapshot_dir = Path(snapshot_dir)
        self._stopping = threading.Event()
        self.reader_stopped = threading.Event()
        self.steering = True                    # False: another dashboard steers this server
        self.role_text = ""                     # the server's word on who steers
        self.engine = EngineSide(self, link, read_only=read_only, clock=clock)
        self.warm = WarmSwitchRun(self, self.engine)
        self.ab = LiveABRun(self, self.engine, self.warm)
        self.changes = OptionChanges(self, self.engine, self.warm, self.ab, apply_delay_s)
        self.events = EngineEvents(self, self.engine, self.warm, self.ab)
        self.set_reactive(InfertopApp.view, initial)
        self.set_reactive(InfertopApp.requested, options)
        self.set_reactive(InfertopApp.speed, speed)
        if self.engine.read_only:
            state = "read-only"
        else:
            state = "live" if initial is not None else "starting"
        self.set_reactive(InfertopApp.engine_state, state)
        self.set_reactive(InfertopApp.engine_note,
                          source or (self.engine.trace_shape if state == "starting" else ""))
        if link is None:
            self.reader_stopped.set()
        elif self.engine.on_server:
            self.set_reactive(InfertopApp.switch_kind, "warm")

    def compose(self) -> ComposeResult:
        yield from dashboard_widgets(InfertopApp, self.engine.clock)

    def on_mount(self) -> None:
        self.show_switch()
        facts = self.engine.facts()
        if facts is not None:
            if facts.journal_problem:
                self.say(f"{facts.journal_problem}. Should the engine crash, what it "
                         f"served cannot be saved: press s while it runs to keep it.",
                         severity="warning", timeout=20)
            self._read_engine()
        self.terminal_watched = terminal_watch.has_controlling_terminal()
        if self.terminal_watched:
            self.set_interval(terminal_watch.WATCH_INTERVAL_S, self._check_terminal,
                              name="terminal watch")

    async def _check_terminal(self) -> None:
        if not terminal_watch.has_controlling_terminal():
            await self.action_quit()

    def on_unmount(self) -> None:
        self._stopping.set()

    @work(thread=True, exclusive=True, name="engine reader", group="engine", exit_on_error=False)
    def _read_engine(self) -> None:
        try:
            self.engine.read(get_current_worker(), self.post_message, self._stopping)
        finally:
            self.reader_stopped.set()

    # -- what the parts use (tui/host.py) ----------------------------------------------------
    def say(self, message: str, *, severity: SeverityLevel = "information",
            timeout: float | None = None) -> None:
        """A notification. Paths, error messages and engine notices are data, never markup:
        a folder named `runs[/]` must not end the session."""
        self.notify(message, severity=severity, timeout=timeout, markup=False)

    def show_switch(self) -> None:
        """The `⇄` line: who steers, the A/B, the warm switch, or the warm switch on."""
        switch, ab = self.warm.under_way, self.ab.running
        self.warming_beside = switch.serving_id if switch is not None and self.warm.warming else ""
        if not self.steering:
            self.switch_note = (part(self.role_text, "watching", 9),
                                part("T takes over once nobody steers", "T: take over", 8))
        elif ab is not None:
            self.switch_note = ab_line(ab, self.engine.now_s())
        elif switch is not None:
            self.switch_note = warm_parts(switch, self.view, self.engine.now_s())
        elif self.switch_kind == "warm":
            self.switch_note = switch_on_parts(server=self.engine.on_server)
        else:
            self.switch_note = ""

    def on_engine_heard(self, message: EngineHeard) -> None:
        self.events.heard(message.heard)

    def on_abcompared(self, message: ABCompared) -> None:
        self.ab.compared(message)

    @on(Worker.StateChanged)
    def _worker_failed(self, event: Worker.StateChanged) -> None:
        if event.state == WorkerState.ERROR:
            self.events.reader_failed(event.worker.error)

    def watch_engine_state(self) -> None:
        self.refresh_bindings()

    # -- the keys (tui/keys.py) --------------------------------------------------------------
    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        engine = self.engine
        if action == "restart_engine":
            return engine.link is not None and not engine.on_server \
                and self.engine_state == "failed"
        if action == "steer":
            return engine.on_server and not self.steering
        if action in ("ab_adopt", "ab_keep"):
            return self.ab.running is not None  # otherwise Enter and Esc do what they always do
        if engine.on_server and action in NOT_ON_A_SERVER:
            return False        # its clients set the arrivals; the engine is the server's
        return True

    def action_cycle(self, key: str) -> None:
        self.changes.cycle(key)

    def action_give_up_compile(self) -> None:
        self.changes.give_up_compile()

    def action_toggle_switch(self) -> None:
        self.warm.toggle()

    def action_toggle_ab(self) -> None:
        self.ab.toggle_mode()

    def action_ab_next_step(self) -> None:
        self.ab.next_step()

    def action_ab_adopt(self) -> None:
        self.ab.adopt()

    def action_ab_keep(self) -> None:
        self.ab.keep()

    def action_pause(self) -> None:
        self.engine.pause()

    def action_speed(self, factor: float) -> None:
        self.engine.change_speed(factor)

    def action_reset_window(self) -> None:
        self.engine.reset_window()

    def action_steer(self) -> None:
        if self.check_action("steer", ()):
            self.engine.steer()

    def action_restart_engine(self) -> None:
        if self.check_action("restart_engine", ()):
            self.engine.restart()

    async def action_quit(self) -> None:
        """Quit at once, whatever the engine is doing: the reader thread ends at its next poll,
        and the engine is stopped (killed if it does not stop) once the app has exited."""
        self._stopping.set()
        self.exit()

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
        if not self.engine.read_only:   # the engine's, or (down, or an A/B) from its journal
            self.engine.send(SaveSnapshot(str(json_path)))
        try:
            write_atomic(svg_path, [self.export_screenshot()])
        except OSError as exc:
            self.say(f"cannot write {svg_path}: {exc.strerror or exc}", severity="error")
        else:
            self.say(f"screenshot saved: {svg_path}")

    def action_help(self) -> None:
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen(list(KEYS), self.engine.log_line()))

    def action_doctor(self) -> None:
        if not isinstance(self.screen, DoctorScreen):
            view, ab = self.view, self.ab.running
            label = derive.config_label(view, view.config_id) if view is not None else ""
            self.push_screen(DoctorScreen(view.diagnosis if view else None,
                                          view.checklist if view else (), label,
                                          ab_report(ab) if ab else ""))

    def action_reasons(self) -> None:
        if not isinstance(self.screen, ReasonsScreen):
            view = self.view
            groups = getattr(view.diagnosis, "guard_groups", ()) if view else ()
            self.push_screen(ReasonsScreen(view.compile_events if view else (), groups,
                                           view.compile_ledger if view else ()))
