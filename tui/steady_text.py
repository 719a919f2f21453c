"""How the steady-state split reads on screen: the warm columns' headers, the backlog a compile
left, and the mark on a window its backlog dominates (probe.analysis.steady_state defines them)."""

from __future__ import annotations

from probe.common.units import fmt_count
from probe.contract.live import LiveView
from tui.format import fitting

BACKLOG_MARK = "*"


def fmt_drain(seconds: float | None) -> str:
    """A drain time in whole units a reader can plan with: "≈ 40 s", "≈ 4 min", "≈ 2 h"."""
    if seconds is None:
        return "—"
    if seconds < 90:
        return f"≈ {max(round(seconds), 1)} s"
    if seconds < 90 * 60:
        return f"≈ {round(seconds / 60)} min"
    return f"≈ {seconds / 3600:.1f} h"


def backlog_line(view: LiveView, width: int) -> str | None:
    """ "queue 53 — left by c2's compiles: drains in ≈ 4 min at the current capacity" (on two
    lines where one is too narrow), or None when the queue is not a compile's backlog."""
    left = view.backlog
    if left is None:
        return None
    head = f"queue {fmt_count(left.queue_depth)} — left by {left.source_config}'s compiles"
    if left.compiling:
        tails = ("still growing (a compile runs)", "growing")
    elif left.drain_s is None:
        tails = ("not draining (offered ≥ capacity)", "not draining")
    else:
        drain = fmt_drain(left.drain_s)
        tails = (f"drains in {drain} at the current capacity", f"drains in {drain}")
    if len(f"{head}: {tails[0]}") <= width:
        return f"{head}: {tails[0]}"
    if len(head) + 1 <= width:                # two lines: what, then when
        return f"{head}:\n{fitting(width, *tails)}"
    return fitting(width, *(f"{head}: {tail}" for tail in tails), head)


def backlog_caption(view: LiveView) -> str | None:
    """Under the latency table: why the window's figures over all requests do not read the
    steady state, and how many of them waited on a compile."""
    warm = view.window.warm
    if warm is None or not view.window.backlog_dominated:
        return None
    return (f"{BACKLOG_MARK} backlog-dominated: {fmt_count(warm.cold)} of "
            f"{fmt_count(warm.requests + warm.cold)} waited on a compile — read warm")
