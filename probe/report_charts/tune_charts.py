"""The chart of `tune --search quick|exhaustive`: each measured trial's goodput against its p95,
both relative to the default (tune.json's `vs_default`, never recomputed), the Pareto frontier
joined, its knee starred and the default marked. Returns the series it plotted."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Sequence

from probe.report_charts.canvas import COLORS, Caption, Chart, finish, new_figure

FRONTIER_CHART = "tune_frontier"


@dataclass(frozen=True)
class TunePoint:
    number: int
    label: str
    goodput: float           # ratio to the default's goodput (higher is better)
    p95: float               # ratio to the default's p95 (lower is better)
    feasible: bool           # met every constraint
    frontier: bool = False
    knee: bool = False
    default: bool = False

    def as_dict(self) -> dict:
        return asdict(self)


def knee_text(point: TunePoint) -> str:
    return f"knee: trial {point.number}, {point.label}"


def frontier_chart(points: Sequence[TunePoint], caption: Caption, *,
                   title: str = "Goodput against p95, each relative to the default") -> Chart:
    figure, (axes,) = new_figure(7.5, 5.0)
    axes.axhline(1.0, color="#777777", linewidth=0.7, linestyle=":")
    axes.axvline(1.0, color="#777777", linewidth=0.7, linestyle=":")
    rest = [p for p in points if not p.frontier and not p.default]
    met = [p for p in rest if p.feasible]
    missed = [p for p in rest if not p.feasible]
    if met:
        axes.plot([p.p95 for p in met], [p.goodput for p in met], linestyle="none",
                  marker="o", color="#999999", label="other trials")
    if missed:
        axes.plot([p.p95 for p in missed], [p.goodput for p in missed], linestyle="none",
                  marker="x", color=COLORS[1], label="missed a constraint")
    front = sorted((p for p in points if p.frontier), key=lambda p: (p.p95, p.goodput))
    if front:
        line, = axes.plot([p.p95 for p in front], [p.goodput for p in front], marker="o",
                          color=COLORS[0], linestyle="-", label="Pareto frontier")
        line.set_gid("frontier")
        for p in front:
            axes.annotate(f"#{p.number}", (p.p95, p.goodput), xytext=(4, -10),
                          textcoords="offset points", fontsize=7)
    for p in points:
        if p.default:
            axes.plot([p.p95], [p.goodput], linestyle="none", marker="s", markersize=9,
                      markerfacecolor="none", markeredgecolor="black", label="default")
            axes.annotate(f"default (trial {p.number})", (p.p95, p.goodput), xytext=(6, 6),
                          textcoords="offset points", fontsize=7)
        if p.knee:
            star, = axes.plot([p.p95], [p.goodput], linestyle="none", marker="*",
                              markersize=15, color=COLORS[4], markeredgecolor="black",
                              label="knee")
            star.set_gid("knee")
            axes.annotate(knee_text(p), (p.p95, p.goodput), xytext=(6, 8),
                          textcoords="offset points", fontsize=8, fontweight="bold")
    axes.set_xlabel("p95 latency relative to the default (lower is better)")
    axes.set_ylabel("goodput relative to the default (higher is better)")
    axes.margins(0.15)
    if points:
        axes.legend(loc="best")
    series = {"points": [p.as_dict() for p in points],
              "frontier": [p.number for p in front],
              "knee": next((p.number for p in points if p.knee), None),
              "default": next((p.number for p in points if p.default), None)}
    return finish(FRONTIER_CHART, title, figure, caption.text(
        "Each point a trial of the search: its figures over the default's, carried through "
        "the control it was alternated with. The frontier: the feasible trials no other beats "
        "on both. ★ the knee: the frontier point farthest from the line joining its ends."),
        series)
