"""The infertop dashboard: one immutable LiveView in an app-level reactive, panels bound to
it, keys that send commands to an engine running in another process.

The event loop never waits on the engine: a worker thread owns the engine handle's start,
poll and restart, and posts what it reads as messages.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any, Callable

from textual import on, work
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.notifications import SeverityLevel
from textual.reactive import reactive
from textual.timer import Timer
from textual.widgets import Footer
from textual.worker import Worker, WorkerState, get_current_worker

from probe.contract.live import LiveView
from probe.contract.options import OPTIONS, OptConfig, Option
from probe.contract.protocol import (
    CutOverDone,
    EngineFailed,
    EngineHandle,
    Finished,
    Live,
    Loading,
    Pause,
    ResetWindow,
    Resume,
    SaveSnapshot,
    SetOptions,
    SetSpeed,
    SnapshotFailed,
    SnapshotSaved,
    WarmFailed,
    WarmProgress,
    WarmReady,
)
from tui import derive
from tui.doctor_screen import DoctorScreen
from tui.help_screen import HelpScreen
from tui.messages import (
    EngineDown,
    EngineLive,
    EngineLoading,
    EngineRestarted,
    ReplayFinished,
    SessionNotSaved,
    SessionSaved,
)
from tui.pending_wait import GIVE_UP_KEY, fallback_label, fallback_options
from tui.reasons_screen import REASONS_KEY, ReasonsScreen
from tui.snapshot_files import snapshot_folder_problem, snapshot_paths, write_text_atomic
from tui.warm_switch import SWITCH_KEY, WarmSwitch, WarmSwitchEvent, wants_warm, warm_line
from tui.widgets.device import DevicePanel
from tui.widgets.doctor_line import DoctorLine
from tui.widgets.failures import FailuresPanel
from tui.widgets.graph_breaks import GraphBreakPanel
from tui.widgets.kv_cache import KVCachePanel
from tui.widgets.latency import LatencyPanel
from tui.widgets.recompiles import RecompilePanel
from tui.widgets.segments import SegmentsPanel
from tui.widgets.status_bar import StatusBar
from tui.widgets.throughput import ThroughputPanel

POLL_S = 0.2
SPEED_ECHO_S = 1.5      # a live view built before the engine took a new speed may still come
APPLY_DELAY_S = 1.0     # toggles are sent once no key has been pressed for this long
MIN_SPEED, MAX_SPEED = 0.125, 64.0
NOTICE_SEVERITY: dict[str, SeverityLevel] = {"info": "information", "warning": "warning",
                                             "error": "error"}


def _cycle(option: Option) -> Binding:
    values = " → ".join(option.values)
    return Binding(option.hotkey, f"cycle('{option.key}')", option.label,
                   show=option.in_footer, id=f"cycle-{option.key}",
                   tooltip=f"{option.hint}: {values}.")


class InfertopApp(App[int]):
    CSS_PATH = "dashboard.tcss"
    TITLE = "infertop"
    ENABLE_COMMAND_PALETTE = False
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (100, "-wide")]
    VERTICAL_BREAKPOINTS = [(0, "-short"), (34, "-tall")]

    BINDINGS = [
        Binding("question_mark", "help", "help", tooltip="This list of keys."),
        # shown only while the engine is down (check_action), so first: it must not be cut off
        Binding("R", "restart_engine", "restart", tooltip="Start an engine again after "
                "it died: it continues the session (same clock, the records served before)."),
        Binding("q", "quit", "quit", tooltip="Stop the engine and quit.", priority=True),
        Binding("ctrl+q", "quit", "quit", tooltip="Stop the engine and quit.", show=False,
                priority=True),
        # one key per option, from the registry (probe/contract/options.py); refinements (freezing,
        # kv_layout) are in the help, not the footer, which keeps room at 120 columns
        *(_cycle(option) for option in OPTIONS),
        Binding("space", "pause", "pause", tooltip="Pause or resume the replay."),
        Binding("plus,equals_sign", "speed(2.0)", "×2", key_display="+",
                tooltip="Replay speed ×2 (at most ×64)."),
        Binding("minus", "speed(0.5)", "÷2", key_display="-",
                tooltip="Replay speed ÷2 (at least ×0.125)."),
        Binding("r", "reset_window", "reset", tooltip="Restart the sliding window of requests."),
        Binding("s", "save_snapshot", "save", tooltip="Save the session JSON and an SVG "
                "screenshot into the snapshot folder."),
        Binding("D", "doctor", "doctor", show=False, tooltip="Why the slowest requests were "
                "slow, cause by cause, the next step, and the readiness checklist."),
        Binding(REASONS_KEY, "reasons", "reasons", show=False,
                tooltip="Every compile event's guard failures and reasons in full (the feed "
                "cuts them to a line)."),
        Binding(SWITCH_KEY, "toggle_switch", "warm/cold switch", show=False,
                tooltip="Warm switch on/off. On: an option change that needs a compile is "
                "compiled and prewarmed in a second engine beside the serving one, then the "
                "session cuts over to it (no request waits on the compile). Off (the "
                "default): the cold switch, requests wait on the compile."),
        Binding(GIVE_UP_KEY, "give_up_compile", "give up compile", show=False,
                tooltip="Give up the running compile: the engine process restarts (a compile "
                "cannot be stopped safely inside it) serving the previous config, and the "
                "session continues as after R."),
    ]

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
    switch_note: reactive[str] = reactive("", init=False)        # the warm switch's line

    def __init__(self, engine: EngineHandle | None, *, initial: LiveView | None = None,
                 options: OptConfig, snapshot_dir: Path, speed: float | None,
                 read_only: bool = False,
                 source: str = "", clock: Callable[[], float] = time.monotonic,
                 apply_delay_s: float = APPLY_DELAY_S) -> None:
        super().__init__()
        self.engine = engine
        self.read_only = read_only or engine is None
        self.snapshot_dir = Path(snapshot_dir)
        self._clock = clock
        self._apply_delay_s = apply_delay_s
        self._apply_timer: Timer | None = None
        self._view_at = clock()
        self._restart = threading.Event()
        self._stopping = threading.Event()
        self.reader_stopped = threading.Event()
        self._notices_seen_s = float("-inf")
        self._warm: WarmSwitch | None = None
        self.set_reactive(InfertopApp.view, initial)
        self.set_reactive(InfertopApp.requested, options)
        self.set_reactive(InfertopApp.speed, speed)
        self._speed_sent_at = float("-inf")
        if self.read_only:
            state = "read-only"
        else:
            state = "live" if initial is not None else "starting"
        self.set_reactive(InfertopApp.engine_state, state)
        self.set_reactive(InfertopApp.engine_note, source)
        if engine is None:
            self.reader_stopped.set()

    # -- layout ------------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        app = InfertopApp
        yield StatusBar(clock=self._clock, id="status").data_bind(
            app.view, app.requested, app.options_sent_s, app.speed, app.paused,
            app.engine_state, app.engine_note, app.switch_note)
        with Vertical(id="body"):
            with Horizontal(id="top"):
                yield LatencyPanel(id="latency").data_bind(app.view)
                with Vertical(id="side"):
                    yield ThroughputPanel(id="throughput").data_bind(app.view)
                    yield KVCachePanel(id="kv").data_bind(app.view)
                    yield DevicePanel(id="device").data_bind(app.view)
            with Horizontal(id="middle"):
                yield RecompilePanel(clock=self._clock, id="recompiles").data_bind(
                    app.view, app.engine_state)
                yield GraphBreakPanel(id="breaks").data_bind(app.view)
            yield FailuresPanel(id="failures").data_bind(app.view)
            yield SegmentsPanel(id="segments").data_bind(app.view)
            yield DoctorLine(id="doctor").data_bind(app.view)
        yield Footer(compact=True, show_command_palette=False)

    def on_mount(self) -> None:
        if self.engine is not None:
            if self.engine.journal_problem:
                self.say(f"{self.engine.journal_problem}. Should the engine crash, what it "
                         f"served cannot be saved: press s while it runs to keep it.",
                         severity="warning", timeout=20)
            self._read_engine()

    def on_unmount(self) -> None:
        self._stopping.set()

    # -- the engine reader (a thread) ----------------------------------------------------------
    @work(thread=True, exclusive=True, name="engine reader", group="engine", exit_on_error=False)
    def _read_engine(self) -> None:
        engine, worker = self.engine, get_current_worker()
        assert engine is not None
        try:
            try:
                engine.start()
                down = False
            except Exception as exc:  # a failed spawn is shown, never a crash
                self.post_message(EngineDown(f"could not start: {type(exc).__name__}: {exc}"))
                down = True
            while not (worker.is_cancelled or self._stopping.is_set()):
                try:
                    down = self._read_once(engine, down)
                except Exception as exc:  # a broken pipe or a bad message: say so, keep going
                    if not down:
                        self.post_message(EngineDown(f"lost the engine: {type(exc).__name__}: "
                                                     f"{exc}"))
                    down = True
                    self._stopping.wait(POLL_S)
        finally:
            self.reader_stopped.set()

    def _read_once(self, engine: EngineHandle, down: bool) -> bool:
        """One poll; returns whether the engine is down. Runs on the reader thread only."""
        if self._restart.is_set():
            self._restart.clear()
            down = self._restart_engine(engine)
        event = engine.poll(POLL_S)
        if isinstance(event, WarmReady):    # cut over here: start/poll/restart never overlap
            engine.cut_over()
            event = CutOverDone(event.shapes, event.seconds)
        if isinstance(event, (WarmProgress, WarmFailed, CutOverDone)):
            self.post_message(WarmSwitchEvent(event))
            return False if isinstance(event, CutOverDone) else down
        if event is None and not down and not engine.is_alive():
            event = engine.poll(0.0) or EngineFailed("the engine process exited")
        if event is None:
            if down:  # a dead engine's poll may return at once: don't spin
                self._stopping.wait(POLL_S)
            return down
        if isinstance(event, EngineFailed):
            if down:
                return down
            down = True
        message = _message_for(event)
        if message is not None:
            self.post_message(message)
        return down

    def _restart_engine(self, engine: EngineHandle) -> bool:
        """Restart on the reader thread, so start/poll/restart never overlap. True: still down."""
        try:
            engine.restart()
        except Exception as exc:
            self.post_message(EngineDown(f"restart failed: {type(exc).__name__}: {exc}"))
            return True
        self.post_message(EngineRestarted())
        return False

    @on(Worker.StateChanged)
    def _worker_failed(self, event: Worker.StateChanged) -> None:
        if event.state == WorkerState.ERROR:
            self.engine_state, self.engine_note = "failed", f"reader: {event.worker.error}"
            self.say(f"lost the engine: {event.worker.error}", severity="error")

    # -- engine events -----------------------------------------------------------------------
    def say(self, message: str, *, severity: SeverityLevel = "information",
            timeout: float | None = None) -> None:
        """A notification. Paths, error messages and engine notices are data, never markup:
        a folder named `runs[/]` must not end the session."""
        self.notify(message, severity=severity, timeout=timeout, markup=False)

    def on_engine_live(self, message: EngineLive) -> None:
        previous, self.view = self.view, message.view
        self._view_at = self._clock()
        self._show_switch()
        if previous is not None and message.view.t_s < previous.t_s:
            self._notices_seen_s = float("-inf")    # a fresh engine: a new session clock
            if self.options_sent_s != float("inf"):
                self.options_sent_s = None          # it started with the options sent last
        if self.engine_state in ("starting", "loading"):
            self.engine_state = "live"
        if self._clock() - self._speed_sent_at > SPEED_ECHO_S:
            self.speed = message.view.replay.speed  # the engine's: it may have chosen it
        for notice in message.view.notices:
            if notice.t_s > self._notices_seen_s:
                self.say(notice.text, severity=NOTICE_SEVERITY.get(notice.level, "information"))
                self._notices_seen_s = notice.t_s

    def on_engine_loading(self, message: EngineLoading) -> None:
        self.engine_state, self.engine_note = "loading", message.text

    def on_engine_down(self, message: EngineDown) -> None:
        self.engine_state, self.engine_note = "failed", message.error
        promise = self.engine.journal_promise() if self.engine is not None else None
        after = promise.after_crash() if promise is not None else ""
        self.say(f"the engine stopped: {message.error}. {after}", severity="error", timeout=15)

    def on_engine_restarted(self, _: EngineRestarted) -> None:
        self.engine_state, self.engine_note = "starting", ""
        if self._warming():                 # a restart stops the side engine too
            self._warm = None
            self._show_switch()
        if self.speed is not None:
            self._send(SetSpeed(self.speed))
        if self.paused:
            self._send(Pause())

    def on_replay_finished(self, _: ReplayFinished) -> None:
        self.engine_state = "finished"
        self.say("the replay ran out of requests")

    def on_session_saved(self, message: SessionSaved) -> None:
        self.say(f"session saved: {message.path}")

    def on_session_not_saved(self, message: SessionNotSaved) -> None:
        self.say(f"could not save the session to {message.path}: {message.error}",
                 severity="error")

    def watch_engine_state(self) -> None:
        self.refresh_bindings()

    # -- keys --------------------------------------------------------------------------------
    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "restart_engine":
            return self.engine is not None and self.engine_state == "failed"
        return True

    def _send(self, command: Any) -> None:
        if self.engine is not None:
            self.engine.send(command)

    def _read_only_says_so(self) -> bool:
        """On a loaded session the keys that drive an engine cannot act: say so, once a press."""
        if self.read_only:
            self.say("read-only: this is a saved session (--load); keys that change the "
                     "engine do nothing here — replay it to try options")
        return self.read_only

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
        if self._warming() and self.engine is not None:
            self.engine.stop_side()         # asked for something else: that warm-up is moot
            self._warm = None
            self._show_switch()
        if self.switch_kind == "warm" and self.engine is not None and wants_warm(
                self.requested, self.view) and self.engine_state == "live":
            self._start_warm_switch()
            return
        self.options_sent_s = self._engine_now_s()
        self._send(SetOptions(self.requested))

    # -- the warm switch ---------------------------------------------------------------------
    def action_toggle_switch(self) -> None:
        if self._read_only_says_so():
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
        assert self.engine is not None and self.view is not None
        self._warm = WarmSwitch(self.requested, self.view.config_id, self._engine_now_s())
        self.options_sent_s = self._engine_now_s()  # pending (asked) until the cut over
        self.engine.warm_switch(self.requested)
        self._show_switch()
        self.say(f"warm switch to {self.requested.label()}: a second engine compiles it beside "
                 f"{self.view.config_id}, which serves until it is ready")

    def on_warm_switch_event(self, message: WarmSwitchEvent) -> None:
        event, switch = message.event, self._warm
        if switch is None:
            return
        if isinstance(event, WarmProgress):
            self._warm = switch.progressed(event.shapes)
        elif isinstance(event, WarmFailed):
            self._warm = None
            if self.view is not None:
                self.requested = self.view.options
            self.say(f"warm switch to {switch.target.label()} failed: {event.error}; "
                     f"{switch.serving_id} serves on", severity="error")
        elif isinstance(event, CutOverDone):
            self._warm = switch.done(self._engine_now_s(), event.seconds, event.shapes,
                                     self.view)
            self.options_sent_s = None      # the side engine started with these options
            self.engine_state, self.engine_note = "starting", ""
            if self.speed is not None:
                self._send(SetSpeed(self.speed))
            if self.paused:
                self._send(Pause())
            self.say(warm_line(self._warm, self.view, self._engine_now_s()))
        self._show_switch()

    def _warming(self) -> bool:
        return self._warm is not None and self._warm.cut_over_s is None

    def _show_switch(self) -> None:
        switch = self._warm
        if switch is not None:
            self.switch_note = warm_line(switch, self.view, self._engine_now_s())
        elif self.switch_kind == "warm":
            self.switch_note = (f"warm switch on: a config that compiles is prewarmed beside "
                                f"the serving one, then cut over — {SWITCH_KEY}: cold switch")
        else:
            self.switch_note = ""

    def _engine_now_s(self) -> float:
        """The engine's session clock now, from the latest live view and the time since."""
        if self.view is None:
            return 0.0
        return self.view.t_s + max(self._clock() - self._view_at, 0.0)

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
        speed = min(max(self.speed * factor, MIN_SPEED), MAX_SPEED)
        if speed == self.speed:
            self.say(f"replay speed is already at its {'max' if factor > 1 else 'min'}imum, "
                     f"×{speed:g}")
            return
        self.speed = speed
        self._speed_sent_at = self._clock()
        self._send(SetSpeed(speed))

    def action_reset_window(self) -> None:
        if self._read_only_says_so():
            return
        self._send(ResetWindow())
        self.say("window reset: figures now cover requests from here on")

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
        if not self.read_only:
            if self.engine_state == "failed":
                self._save_without_engine(str(json_path))
            else:
                self._send(SaveSnapshot(str(json_path)))
        try:
            write_text_atomic(svg_path, self.export_screenshot())
        except OSError as exc:
            self.say(f"cannot write {svg_path}: {exc.strerror or exc}", severity="error")
        else:
            self.say(f"screenshot saved: {svg_path}")

    @work(thread=True, name="save from the journal", group="save", exit_on_error=False)
    def _save_without_engine(self, path: str) -> None:
        """The engine is down: the session JSON is written here from its journal, on a thread
        (a long session's journal takes a moment to read)."""
        assert self.engine is not None
        try:
            self.engine.write_snapshot(path)
        except OSError as exc:
            self.post_message(SessionNotSaved(path, f"{exc.strerror or exc}"))
        except Exception as exc:  # an unreadable journal: said, never a crash
            self.post_message(SessionNotSaved(path, f"{exc}"))
        else:
            self.post_message(SessionSaved(path))

    def action_help(self) -> None:
        if not isinstance(self.screen, HelpScreen):
            keys = [b for b in self.BINDINGS if isinstance(b, Binding)]    # all of them are
            self.push_screen(HelpScreen(keys, self.log_line()))

    def action_doctor(self) -> None:
        if not isinstance(self.screen, DoctorScreen):
            view = self.view
            label = derive.config_label(view, view.config_id) if view is not None else ""
            self.push_screen(DoctorScreen(view.diagnosis if view else None,
                                          view.checklist if view else (), label))
    def action_reasons(self) -> None:
        if not isinstance(self.screen, ReasonsScreen):
            self.push_screen(ReasonsScreen(self.view.compile_events if self.view else ()))

    def log_line(self) -> str:
        if self.engine is None:
            return "engine log: none (no engine: a saved session)"
        if self.engine.log_path:
            return f"engine log: {self.engine.log_path}"
        return f"engine log: none ({self.engine.log_problem or 'not started yet'})"

    async def action_quit(self) -> None:
        """Quit at once, whatever the engine is doing: the reader thread ends at its next poll,
        and the engine is stopped (killed if it does not stop) once the app has exited."""
        self._stopping.set()
        self.exit()

    def action_give_up_compile(self) -> None:
        """Abandon the running compile: the previous config is asked for (the engine process
        keeps it for its restart) and the engine restarts; a compile holds the GIL in the
        engine and cannot be interrupted there safely."""
        if self._read_only_says_so() or self.engine is None:
            return
        view = self.view
        if view is None or view.compiling is None or self.engine_state != "live":
            self.say(f"no compile is running: {GIVE_UP_KEY} gives up a running compile")
            return
        _, options = fallback_options(view)
        label, who = fallback_label(view), view.compiling.request_id or "a prewarm"
        if self._apply_timer is not None:
            self._apply_timer.stop()
            self._apply_timer = None
        self.requested = options
        self._send(SetOptions(options))
        self.options_sent_s = None          # the restarted engine starts with these
        self.engine_state, self.engine_note = "starting", ""
        self._restart.set()
        self.say(f"gave up {view.config_id}'s compile ({who} waited): restarting the engine "
                 f"on {label}; the session continues")

    def action_restart_engine(self) -> None:
        if self.engine is None or self.engine_state != "failed":
            return
        self.engine_state, self.engine_note = "starting", ""
        self._restart.set()


def _message_for(event: Any) -> Message | None:
    if isinstance(event, Live):
        return EngineLive(event.view)
    if isinstance(event, Loading):
        return EngineLoading(event.text)
    if isinstance(event, EngineFailed):
        return EngineDown(event.error)
    if isinstance(event, SnapshotSaved):
        return SessionSaved(event.path)
    if isinstance(event, SnapshotFailed):
        return SessionNotSaved(event.path, event.error)
    if isinstance(event, Finished):
        return ReplayFinished()
    return None
