"""The live A/B as the dashboard runs it (tui/live_ab.py says what it is): `v` runs the
doctor's next step against the served config, `V` makes the next option change an A/B instead
of a switch, `Enter` adopts arm B, `Esc` keeps arm A (asks to the engine link, which ends it
below the seam); the engines' word on the arms moves it on, and the comparison is computed on
a thread, as `doctor --verify` computes it."""

from __future__ import annotations

from dataclasses import replace
from functools import partial

from probe.analysis.ab_compare import compare
from probe.analysis.next_step import NextStep
from probe.contract.engine_link import ABEnd, ABEnded, ABSplit, ABStart, ArmLive, ArmStarted
from probe.contract.live import LiveView
from probe.contract.options import OptConfig
from tui.engine_side import EngineSide
from tui.host import Host
from tui.live_ab import AB_MODE_KEY, LiveAB, result_text, step_target
from tui.messages import ABCompared
from tui.warm_switch_run import WarmSwitchRun


class LiveABRun:
    def __init__(self, host: Host, engine: EngineSide, warm: WarmSwitchRun) -> None:
        self.host = host
        self.engine = engine
        self.warm = warm
        self.running: LiveAB | None = None
        self.mode = False                   # V: the next option change runs as an A/B
        self._comparing = False

    # -- starting one ------------------------------------------------------------------------
    def toggle_mode(self) -> None:
        if self.engine.read_only_says_so():
            return
        self.mode = not self.mode
        self.host.say("A/B on: the next option change runs beside the served config on "
                      f"alternate requests ({AB_MODE_KEY} again: off)" if self.mode else
                      "A/B off: option changes switch the served config")

    def next_step(self) -> None:
        if self.engine.read_only_says_so():
            return
        view = self.host.view
        found = step_target(view) if view is not None else None
        if found is None:
            self.host.say(f"the doctor has no next step to A/B: press {AB_MODE_KEY}, then an "
                          f"option key, to A/B a change of your own")
            return
        self.start(*found)

    def start(self, target: OptConfig, step: NextStep | None = None) -> None:
        """Arm B on `target` beside the served config, or why it cannot, said."""
        host, view, facts = self.host, self.host.view, self.engine.facts()
        why = None
        if facts is None or view is None or host.engine_state != "live":
            why = "the engine is not serving yet"
        elif self.running is not None:
            why = "an A/B is running: Enter adopts B, Esc keeps A"
        elif self.warm.warming:
            why = "a warm switch is under way"
        elif target == view.options:
            why = f"{target.label()} is the config served"
        elif facts.journal_problem:
            why = f"arm B records into the session's journal, and {facts.journal_problem}"
        if why is not None:
            host.say(f"no A/B: {why}", severity="warning")
            return
        assert view is not None
        self.warm.forget(cut_over=True)     # the last switch's line gives way to the A/B's
        self.running = LiveAB(target, view.config_id, self.engine.now_s(), step)
        self.mode = False
        self.engine.send(ABStart(target))
        host.show_switch()
        host.say(f"A/B: a second engine warms {target.label()} beside {view.config_id}; then "
                 f"they serve alternate requests, half the trace's rate each")

    # -- ending it ---------------------------------------------------------------------------
    def adopt(self) -> None:
        if self.running is None:
            return
        if not self.running.split:
            self.host.say("arm B is still warming: Esc gives it up")
            return
        self.engine.send(ABEnd(adopt=True))
        self.host.say(f"adopting {self.running.b_id or 'arm B'}: it first serves the requests "
                      f"it was handed (a compile it is in finishes first), then everything")

    def keep(self) -> None:
        if self.running is not None:
            self.engine.send(ABEnd(adopt=False))
            if self.running.split:
                self.host.say(f"keeping {self.running.a_id}: arm B first serves the requests "
                              f"it was handed, then stops")

    def _over(self, how: str, error: str = "") -> None:
        ab, host = self.running, self.host
        self.running = None
        if ab is None:
            return
        if how == "failed":
            host.say(f"A/B ended: {error}; {ab.a_id} serves everything; both arms' requests "
                     f"are in the session", severity="error")
            host.show_switch()
            return
        result = result_text(ab) if ab.split else "not compared"
        if how == "adopt":
            host.requested = ab.target
            host.options_sent_s = None          # arm B serves with these
            self.engine.another_engine_serves()
            said = f"adopted {ab.b_id or ab.target.label()} (B)"
        else:
            said = f"kept {ab.a_id} (A); arm B stopped" if ab.split else (
                f"gave up warming {ab.target.label()}")
        host.say(f"A/B ended: {said} · {result} · both arms are in the session as segments")
        host.show_switch()

    # -- what the engines say ----------------------------------------------------------------
    def saw_a(self, view: LiveView) -> None:
        """Arm A's live view (the served config's)."""
        if self.running is not None:
            self.running = self.running.seen(view, "a")
            self._compare_when_stale()

    def heard(self, event: ArmStarted | ArmLive | ABSplit | ABEnded) -> None:
        ab = self.running
        if isinstance(event, ABEnded):
            self._over(event.how, event.error)
            return
        if ab is None:
            return
        if isinstance(event, ArmStarted):
            self.running = replace(ab, b_id=event.config_id)
        elif isinstance(event, ABSplit):
            self.running = replace(ab, split_s=self.engine.now_s())
        else:
            self.running = ab.seen(event.view, "b")
            self._compare_when_stale()
        self.host.show_switch()

    def _compare_when_stale(self) -> None:
        ab = self.running
        if ab is not None and ab.stale() and not self._comparing:
            self._comparing = True
            self.host.run_worker(partial(self._compare, ab), group="ab compare",
                                 exclusive=True, thread=True, exit_on_error=False)

    def _compare(self, ab: LiveAB) -> None:
        """On a worker thread: the arms compared, posted back to the app."""
        slo = self.host.view.slo if self.host.view is not None else None
        a, b = ab.arms()
        try:
            comparison = compare(a, b, slo=slo)
        finally:
            self._comparing = False
        self.host.post_message(ABCompared(ab.asked_s, comparison, (len(a), len(b))))

    def compared(self, message: ABCompared) -> None:
        ab = self.running
        if ab is not None and ab.asked_s == message.asked_s:
            self.running = replace(ab, comparison=message.comparison, compared_n=message.counts)
            self.host.show_switch()
            self._compare_when_stale()
