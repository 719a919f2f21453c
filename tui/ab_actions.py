"""The live A/B's keys and events (tui/live_ab.py says what it is): `v` runs the doctor's next
step against the served config, `V` makes the next option change an A/B instead of a switch,
`Enter` adopts arm B, `Esc` keeps arm A (asks to the engine link, which ends it below the
seam); the comparison is computed on a thread, as `doctor --verify` computes it."""

from __future__ import annotations

from dataclasses import replace

from textual import work
from textual.message import Message

from probe.analysis.ab_compare import Comparison, compare
from probe.analysis.next_step import NextStep
from probe.contract.engine_link import ABEnd, ABEnded, ABSplit, ABStart, ArmLive, ArmStarted
from probe.contract.live import LiveView
from probe.contract.options import OptConfig
from tui.key_actions import KeyActions
from tui.live_ab import AB_MODE_KEY, LiveAB, result_text, step_target


class ABCompared(Message):
    """The arms compared on the thread, for the A/B asked at `asked_s`, on `counts` requests."""

    def __init__(self, asked_s: float, comparison: Comparison, counts: tuple[int, int]) -> None:
        super().__init__()
        self.asked_s, self.comparison, self.counts = asked_s, comparison, counts


class ABActions(KeyActions):
    ab_mode = False                     # V: the next option change runs as an A/B
    _ab_comparing = False

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("ab_adopt", "ab_keep"):
            return self._ab is not None     # otherwise Enter and Esc do what they always do
        return super().check_action(action, parameters)

    # -- starting one ------------------------------------------------------------------------
    def action_toggle_ab(self) -> None:
        if self._read_only_says_so():
            return
        self.ab_mode = not self.ab_mode
        self.say("A/B on: the next option change runs beside the served config on alternate "
                 f"requests ({AB_MODE_KEY} again: off)" if self.ab_mode else
                 "A/B off: option changes switch the served config")

    def action_ab_next_step(self) -> None:
        if self._read_only_says_so():
            return
        found = step_target(self.view) if self.view is not None else None
        if found is None:
            self.say(f"the doctor has no next step to A/B: press {AB_MODE_KEY}, then an "
                     f"option key, to A/B a change of your own")
            return
        self.start_ab(*found)

    def start_ab(self, target: OptConfig, step: NextStep | None = None) -> None:
        """Arm B on `target` beside the served config, or why it cannot, said."""
        view, facts = self.view, self.facts()
        why = None
        if facts is None or view is None or self.engine_state != "live":
            why = "the engine is not serving yet"
        elif self._ab is not None:
            why = "an A/B is running: Enter adopts B, Esc keeps A"
        elif self._warming():
            why = "a warm switch is under way"
        elif target == view.options:
            why = f"{target.label()} is the config served"
        elif facts.journal_problem:
            why = f"arm B records into the session's journal, and {facts.journal_problem}"
        if why is not None:
            self.say(f"no A/B: {why}", severity="warning")
            return
        assert view is not None
        self._ab = LiveAB(target, view.config_id, self._engine_now_s(), step)
        self.ab_mode = False
        self._send(ABStart(target))
        self._show_switch()
        self.say(f"A/B: a second engine warms {target.label()} beside {view.config_id}; then "
                 f"they serve alternate requests, half the trace's rate each")

    def action_cycle(self, key: str) -> None:
        if self._ab is not None and not self.read_only:
            self.say("an A/B is running: Enter adopts B, Esc keeps A; then options change "
                     "again", severity="warning")
            return
        super().action_cycle(key)

    def _send_options(self) -> None:
        """With `V` on, the change staged runs as an A/B instead of being served."""
        view = self.view
        if not self.ab_mode or view is None or self.requested == view.options:
            super()._send_options()
            return
        self._apply_timer = None
        self.start_ab(self.requested)
        self.requested = view.options   # A serves on; B's options are the A/B line's

    # -- ending it ---------------------------------------------------------------------------
    def action_ab_adopt(self) -> None:
        ab = self._ab
        if ab is None:
            return
        if not ab.split:
            self.say("arm B is still warming: Esc gives it up")
            return
        self._send(ABEnd(adopt=True))

    def action_ab_keep(self) -> None:
        if self._ab is not None:
            self._send(ABEnd(adopt=False))

    def _ab_over(self, how: str, error: str = "") -> None:
        ab, self._ab = self._ab, None
        if ab is None:
            return
        if how == "failed":
            self.say(f"A/B ended: {error}; {ab.a_id} serves everything; both arms' requests "
                     f"are in the session", severity="error")
            self._show_switch()
            return
        result = result_text(ab) if ab.split else "not compared"
        if how == "adopt":
            self.requested = ab.target
            self.options_sent_s = None          # arm B serves with these
            self._another_engine_serves()
            said = f"adopted {ab.b_id or ab.target.label()} (B)"
        else:
            said = f"kept {ab.a_id} (A); arm B stopped" if ab.split else (
                f"gave up warming {ab.target.label()}")
        self.say(f"A/B ended: {said} · {result} · both arms are in the session as segments")
        self._show_switch()

    # -- what the engines say ----------------------------------------------------------------
    def ab_saw_a(self, view: LiveView) -> None:
        if self._ab is not None:
            self._ab = self._ab.seen(view, "a")
            self._compare_when_stale()

    def on_ab_event(self, event: ArmStarted | ArmLive | ABSplit | ABEnded) -> None:
        ab = self._ab
        if isinstance(event, ABEnded):
            self._ab_over(event.how, event.error)
            return
        if ab is None:
            return
        if isinstance(event, ArmStarted):
            self._ab = replace(ab, b_id=event.config_id)
        elif isinstance(event, ABSplit):
            self._ab = replace(ab, split_s=self._engine_now_s())
        elif isinstance(event, ArmLive):
            self._ab = ab.seen(event.view, "b")
            self._compare_when_stale()
        self._show_switch()

    def _compare_when_stale(self) -> None:
        ab = self._ab
        if ab is not None and ab.stale() and not self._ab_comparing:
            self._ab_comparing = True
            self._compare(ab)

    @work(thread=True, exclusive=True, group="ab compare", exit_on_error=False)
    def _compare(self, ab: LiveAB) -> None:
        slo = self.view.slo if self.view is not None else None
        a, b = ab.arms()
        try:
            comparison = compare(a, b, slo=slo)
        finally:
            self._ab_comparing = False
        self.post_message(ABCompared(ab.asked_s, comparison, (len(a), len(b))))

    def on_abcompared(self, message: ABCompared) -> None:
        ab = self._ab
        if ab is not None and ab.asked_s == message.asked_s:
            self._ab = replace(ab, comparison=message.comparison, compared_n=message.counts)
            self._show_switch()
            self._compare_when_stale()

