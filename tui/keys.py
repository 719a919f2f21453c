"""The dashboard's keys: a binding per action, one per option read from the registry
(probe/contract/options.py). The help screen lists these, so it cannot drift from what works."""

from __future__ import annotations

from textual.binding import Binding

from probe.contract.options import OPTIONS, Option
from tui.live_ab import AB_MODE_KEY, AB_STEP_KEY, ADOPT_KEY, KEEP_KEY
from tui.pending_wait import GIVE_UP_KEY
from tui.reasons_screen import REASONS_KEY
from tui.warm_switch import SWITCH_KEY


def _cycle(option: Option) -> Binding:
    values = " → ".join(option.values)
    return Binding(option.hotkey, f"cycle('{option.key}')", option.label,
                   show=option.in_footer, id=f"cycle-{option.key}",
                   tooltip=f"{option.hint}: {values}.")


KEYS: list[Binding] = [
    Binding("question_mark", "help", "help", tooltip="This list of keys."),
    # shown only while the engine is down (check_action), so first: it must not be cut off
    Binding("R", "restart_engine", "restart", tooltip="Start an engine again after "
            "it died: it continues the session (same clock, the records served before)."),
    # shown only on a server's dashboard that watches (check_action)
    Binding("T", "steer", "take over", tooltip="On a server another dashboard steers: "
            "steer it from here once that one has left."),
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
            "cuts them to a line), then the session's compile ledger: each graph's calls, "
            "run time, compile seconds, the requests that waited and whether it paid back."),
    Binding(SWITCH_KEY, "toggle_switch", "warm/cold switch", show=False,
            tooltip="Warm switch on/off. On: an option change that needs a compile is "
            "compiled and prewarmed in a second engine beside the serving one, then the "
            "session cuts over to it (no request waits on the compile). Off (the "
            "default): the cold switch, requests wait on the compile."),
    Binding(AB_STEP_KEY, "ab_next_step", "A/B next step", show=False,
            tooltip="A/B the doctor's next step live: a second engine warms it beside the "
            "served config, then the two serve alternate arrivals (half the trace's rate "
            "each), compared with bootstrap intervals until Enter or Esc."),
    Binding(AB_MODE_KEY, "toggle_ab", "A/B the next change", show=False,
            tooltip="The next option key runs its change as a live A/B against the served "
            "config instead of switching to it."),
    Binding(ADOPT_KEY, "ab_adopt", "adopt B", show=False,
            tooltip="During an A/B: serve arm B from now on (arm A's engine stops)."),
    Binding(KEEP_KEY, "ab_keep", "keep A", show=False,
            tooltip="During an A/B: keep arm A (arm B's engine stops); both arms stay in "
            "the session as segments."),
    Binding(GIVE_UP_KEY, "give_up_compile", "give up compile", show=False,
            tooltip="Give up the running compile: the engine process restarts (a compile "
            "cannot be stopped safely inside it) serving the previous config, and the "
            "session continues as after R."),
]
