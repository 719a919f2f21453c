"""The live A/B, as the dashboard holds and says it: the served config (arm A) and a change
(arm B, from the doctor's next step or an option key after `V`) serve alternate arrivals of
the same trace in two warm engines; their requests since the split are compared with the
headless `doctor --verify`'s figures and bootstrap intervals (probe/analysis/ab_compare.py),
until `Enter` adopts B or `Esc` keeps A. Both arms stay in the session as segments."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Iterable, Mapping

from probe.analysis.ab_compare import HEADLINE, Comparison
from probe.analysis.ab_table import comparison_lines, signed_text
from probe.analysis.next_step import NextStep, prediction_held
from probe.common.units import fmt_ms
from probe.contract.live import LiveView
from probe.contract.options import OptConfig
from probe.contract.records import RequestRecord
from tui.fit_line import Part, part
from tui.pending_wait import fmt_wait

AB_MODE_KEY = "V"           # the next option change runs as an A/B
AB_STEP_KEY = "v"           # A/B the doctor's next step now
ADOPT_KEY, KEEP_KEY = "enter", "escape"


@dataclass(frozen=True)
class LiveAB:
    target: OptConfig                   # arm B's options
    a_id: str                           # arm A: the config served when it was asked
    asked_s: float                      # session time it was asked
    step: NextStep | None = None        # the doctor's step it verifies, if it is one
    b_id: str = ""                      # arm B's config id, once its engine said
    split_s: float | None = None        # session time both arms began serving
    records_a: Mapping[int, RequestRecord] = field(default_factory=dict)    # by seq
    records_b: Mapping[int, RequestRecord] = field(default_factory=dict)
    b_view: LiveView | None = None
    comparison: Comparison | None = None
    compared_n: tuple[int, int] = (0, 0)    # the counts `comparison` was computed on

    @property
    def split(self) -> bool:
        return self.split_s is not None

    def seen(self, view: LiveView, arm: str) -> LiveAB:
        """Each arm's requests, gathered from its live views' recent records as they pass (a
        window: never lost between two views); arms() keeps those since the split."""
        if self.split_s is None:
            return self if arm == "a" else replace(self, b_view=view)
        config_id = self.a_id if arm == "a" else self.b_id
        held = self.records_a if arm == "a" else self.records_b
        gathered = gather(held, view.recent, config_id, self.asked_s)
        if arm == "a":
            return replace(self, records_a=gathered) if gathered is not held else self
        return replace(self, records_b=gathered, b_view=view)

    def arms(self) -> tuple[list[RequestRecord], list[RequestRecord]]:
        """Each arm's requests since the split, by seq: the split hands arm B every other
        request from the first one queued (the backlog is split too), so arm A's begin one
        before B's first; what A served before that was served at the whole trace's rate."""
        b = list(self.records_b.values())
        if not b:       # no seq to start from yet: arm A's arrivals since the split
            split_s = self.split_s if self.split_s is not None else float("inf")
            return [r for r in self.records_a.values() if r.arrival_s >= split_s], b
        first = min(self.records_b) - 1
        return [r for seq, r in self.records_a.items() if seq >= first], b

    def counts(self) -> tuple[int, int]:
        a, b = self.arms()
        return len(a), len(b)

    def stale(self) -> bool:
        """New requests since the comparison shown."""
        return self.split and self.counts() != self.compared_n


def gather(held: Mapping[int, RequestRecord], recent: Iterable[RequestRecord],
           config_id: str, since_s: float) -> Mapping[int, RequestRecord]:
    """`held` with the records of `config_id` that ended since `since_s` added (by seq); the
    same object when nothing is new."""
    new = {r.seq: r for r in recent
           if r.config_id == config_id and r.end_s >= since_s and r.seq not in held}
    return {**held, **new} if new else held


def ab_line(ab: LiveAB, now_s: float) -> tuple[Part, ...]:
    """The status bar's line, e.g. "A/B c1 (A) ↔ c3 batching=continuous (B) · Enter adopts B,
    Esc keeps A · every other request each: half the rate · 14 | 13 served: p95 1.84 s →
    0.91 s, B − A −0.93 s [−1.40 s, −0.42 s]: better · doctor predicted …: held", as parts
    that shorten by meaning (tui/fit_line.py): how many would tell and what was served since
    the comparison first, then the rate, the keys, the arms' labels, the prediction's wording;
    the result and its verdict last."""
    arms = f"A/B {ab.a_id} (A) ↔ {ab.b_id or 'new'} {ab.target.label()} (B)"
    short_arms = f"A/B {ab.a_id}↔{ab.b_id or 'new'}"
    if not ab.split:
        waited = fmt_wait(max(now_s - ab.asked_s, 0.0))
        return (part(arms, short_arms, 3),
                part(f"B compiles and prewarms beside {ab.a_id}, {waited} so far",
                     f"B warming, {waited}", 2),
                part("Esc gives it up", "Esc: give up", 1))
    parts = [part(arms, short_arms, 4), part("Enter adopts B, Esc keeps A", "⏎/Esc", 3),
             part("every other request each: half the rate", None, 2),
             part(*result_texts(ab), 6)]
    c = ab.comparison
    if c is not None and c.requests_to_tell is not None:
        parts.append(part(f"about {c.requests_to_tell} a side to tell", None, 0))
    since = since_text(ab)
    if since:
        parts.append(part(since, None, 1))
    held = held_text(ab)
    if held:
        parts.append(part(held, "doctor ✓" if held.endswith(": held") else "doctor ✗", 5))
    return tuple(parts)


def result_texts(ab: LiveAB) -> tuple[str, str]:
    """The arms' counts and their comparison, in full and short, as one value: the counts are
    the comparison's own (the requests it was computed on); what was served since is said
    apart (since_text), so the same counts never read two different results."""
    if ab.comparison is None:
        a, b = ab.counts()
        text = f"{a} | {b} served: not compared yet"
        return text, text
    c = ab.comparison
    return (f"{c.requests_a} | {c.requests_b} served: {verdict_text(c, tell=False)}",
            f"{c.requests_a}|{c.requests_b} {short_verdict(c)}")


def since_text(ab: LiveAB) -> str:
    """ "+3 | +2 served since, comparing": requests the shown comparison does not hold yet."""
    c = ab.comparison
    if c is None:
        return ""
    since = tuple(n - m for n, m in zip(ab.counts(), (c.requests_a, c.requests_b)))
    return f"+{since[0]} | +{since[1]} served since, comparing" if any(since) else ""


def result_text(ab: LiveAB) -> str:
    """The closing line's result: the status line's, with what was served since."""
    since = since_text(ab)
    return result_texts(ab)[0] + (f" · {since}" if since else "")


def verdict_text(comparison: Comparison, tell: bool = True) -> str:
    metric = comparison.metrics[HEADLINE]
    if metric.a is None or metric.b is None or metric.delta is None:
        return "p95: too few served yet"
    interval = ""
    if metric.ci95 is not None:
        lo, hi = metric.ci95
        interval = f" [{signed_text(HEADLINE, lo)}, {signed_text(HEADLINE, hi)}]"
    text = (f"p95 {fmt_ms(metric.a)} → {fmt_ms(metric.b)}, B − A "
            f"{signed_text(HEADLINE, metric.delta)}{interval}: {comparison.verdict}")
    if tell and comparison.requests_to_tell is not None:
        text += f" (about {comparison.requests_to_tell} a side to tell)"
    return text


def short_verdict(comparison: Comparison) -> str:
    metric = comparison.metrics[HEADLINE]
    if metric.a is None or metric.b is None or metric.delta is None:
        return "too few yet"
    return f"p95 {fmt_ms(metric.a)} → {fmt_ms(metric.b)}: {comparison.verdict}"


def held_text(ab: LiveAB) -> str:
    """The doctor's prediction against arm B's segment, once it has one."""
    if ab.step is None or ab.b_view is None:
        return ""
    segment = next((s for s in ab.b_view.segments if s.config_id == ab.b_id), None)
    judged = prediction_held(ab.step, segment) if segment is not None else None
    if judged is None:
        return ""
    held, said = judged
    return f"doctor {said}: {'held' if held else 'did not hold'}"


def step_target(view: LiveView) -> tuple[OptConfig, NextStep] | None:
    """The doctor's next step for the served config, as the options it would serve."""
    step = getattr(view.diagnosis, "next_step", None)
    if step is None or not step.options:
        return None
    target = view.options
    for key, value in step.options.items():
        target = target.with_option(key, value)
    return (target, step) if target != view.options else None


def ab_report(ab: LiveAB) -> str:
    """The doctor screen's section while an A/B runs: every figure `doctor --verify` compares,
    A, B, B − A and its interval, then the verdict and the doctor's prediction."""
    head = (f"live A/B: A = {ab.a_id}, B = {ab.b_id or 'new'} {ab.target.label()}; every other "
            f"request each since the split, half the trace's rate · Enter adopts B, Esc keeps A")
    if not ab.split:
        return f"{head}\n  arm B is still warming"
    if ab.comparison is None:
        a, b = ab.counts()
        return f"{head}\n  {a} | {b} served: not compared yet"
    lines = [head, *comparison_lines(ab.comparison)]
    held = held_text(ab)
    if held:
        lines.append(f"  prediction: {held}")
    return "\n".join(lines)
