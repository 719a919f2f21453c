"""`snapshot compare`'s doctor lines: which cause of the tail's latency moved between segments."""

from __future__ import annotations

from probe.analysis.attribution import CAUSES
from probe.analysis.diagnosis import SegmentDiagnosis
from probe.common.units import fmt_ms

MOVED_PP = 5.0      # a cause whose share moved less than this many points did not move


def cause_moves(a: SegmentDiagnosis, b: SegmentDiagnosis) -> list[str]:
    """The largest cause of each side, and every cause whose share (or tail time) moved."""
    def top(d: SegmentDiagnosis) -> str:
        t = d.tail.top
        return "nothing served" if t is None else f"{t.cause} {100 * t.share:.0f}%"

    lines = [f"doctor: the tail's largest cause A {top(a)} → B {top(b)}"]
    moves = []
    for name in CAUSES:
        ca, cb = a.tail.cause(name), b.tail.cause(name)
        pp = 100 * (cb.share - ca.share)
        if abs(pp) >= MOVED_PP:
            per_a = ca.ms / a.tail.requests if a.tail.requests else 0.0
            per_b = cb.ms / b.tail.requests if b.tail.requests else 0.0
            moves.append((abs(pp), f"{name} {pp:+.0f} pp ({fmt_ms(per_a)} → {fmt_ms(per_b)} a "
                                   f"tail request)"))
    moves.sort(reverse=True)
    lines.append("  moved: " + ("; ".join(text for _, text in moves) if moves else
                                f"no cause moved {MOVED_PP:.0f} points or more"))
    return lines + [f"  A: {a.verdict}", f"  B: {b.verdict}"]
