"""The charts more than one bench section draws (p95 against offered rate, the compile split),
each from the numbers report.json holds (the sections' `configs`, the runs' figures, the
open-loop results), never recomputed, returning the series it plotted. A chart of one
experiment's alone is drawn in its module (probe/bench/experiments/)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

from probe.report_charts.canvas import (
    Caption,
    Chart,
    bar_style,
    finish,
    log_scale,
    new_figure,
    style,
)

PHASES = (("tracing", "tracing_s"), ("AOTAutograd", "aot_s"), ("inductor", "inductor_s"),
          ("cache load", "cache_load_s"))


@dataclass(frozen=True)
class RateCurve:
    """One config's open-loop replays: p95 (and SLO attainment, when measured) by offered rate,
    and its knee: the highest offered rate it kept up with."""
    label: str
    offered_rps: tuple[float, ...]
    p95_ms: tuple[float | None, ...]
    knee_rps: float | None
    attainment: tuple[float | None, ...] | None = None    # fraction of requests within the SLO






def rate_curve(label: str, runs: Sequence[Mapping]) -> RateCurve:
    runs = sorted(runs, key=lambda r: r["offered_rps"])
    kept = [r["offered_rps"] for r in runs if r.get("keeps_up")]
    attainment = ([r.get("slo_attainment") for r in runs]
                  if any("slo_attainment" in r for r in runs) else None)
    return RateCurve(label, tuple(r["offered_rps"] for r in runs),
                     tuple((r.get("latency_ms") or {}).get("p95") for r in runs),
                     max(kept, default=None), None if attainment is None else tuple(attainment))


def rate_curves(panels: Mapping[str, Sequence[RateCurve]], caption: Caption, *, name: str,
                title: str) -> Chart:
    """p95 against offered rate per config, one panel per trace, each config's knee starred;
    a second row of SLO attainment where the runs measured it."""
    with_slo = any(c.attainment is not None for curves in panels.values() for c in curves)
    figure, axes = new_figure(4.6 * max(len(panels), 1) + 1.5, 6.5 if with_slo else 4.2,
                              rows=2 if with_slo else 1, cols=max(len(panels), 1))
    series: dict[str, dict] = {}
    for column, (trace, curves) in enumerate(panels.items()):
        top = axes[column]
        for index, curve in enumerate(curves):
            look = style(index)
            line, = top.plot(curve.offered_rps, curve.p95_ms, label=curve.label, **look)
            line.set_gid(f"rate-{trace}-{curve.label}")
            if curve.knee_rps is not None:
                knee = curve.p95_ms[curve.offered_rps.index(curve.knee_rps)]
                top.plot([curve.knee_rps], [knee], marker="*", markersize=13, linestyle="none",
                         color=look["color"], markeredgecolor="black")
            series[f"{trace}/{curve.label}"] = {
                "offered_rps": list(curve.offered_rps), "p95_ms": list(curve.p95_ms),
                "knee_rps": curve.knee_rps,
                "attainment": None if curve.attainment is None else list(curve.attainment)}
            if with_slo and curve.attainment is not None:
                bottom = axes[len(panels) + column]
                bottom.plot(curve.offered_rps, [None if a is None else 100 * a
                                                for a in curve.attainment], **look)
                bottom.set_xlabel("offered rate (requests/s)")
                bottom.set_ylabel("SLO attainment (% of requests)")
        log_scale(top)
        top.set_title(trace)
        top.set_xlabel("offered rate (requests/s)")
        top.set_ylabel("p95 latency (ms, log scale)")
        top.legend(loc="upper left")
    return finish(name, title, figure, caption.text(
        "Open loop: requests arrive at the trace's times scaled to each rate. ★ the knee: "
        "the highest offered rate the config kept up with (served ≥ 90% of it)."), series)














def compile_split(runs: Mapping[str, Mapping], caption: Caption) -> Chart:
    """Each compiled run's compile seconds as dynamo split them (tracing, AOTAutograd,
    inductor, cache load), stacked."""
    split = {run.get("label") or key: run["compile_phases"] for key, run in runs.items()
             if isinstance(run, Mapping) and run.get("compile_phases")
             and sum(run["compile_phases"].get(k, 0.0) for _, k in PHASES) > 0}
    figure, (axes,) = new_figure(9.0, 1.6 + 0.45 * max(len(split), 1))
    labels = list(split)
    left = [0.0] * len(labels)
    for p_index, (name, key) in enumerate(PHASES):
        values = [split[label].get(key, 0.0) for label in labels]
        axes.barh(range(len(labels)), values, left=left, label=name, **bar_style(p_index))
        left = [a + b for a, b in zip(left, values)]
    axes.set_yticks(range(len(labels)), labels, fontsize=7.5)
    axes.invert_yaxis()
    axes.set_xlabel("compile time (s)")
    axes.legend(loc="lower center", bbox_to_anchor=(0.5, 1.0), ncols=len(PHASES))
    return finish("compile_split", "Compile time per config, by phase", figure, caption.text(
        "Summed over each run's compiles as dynamo timed them; cache load: AOTAutograd's time "
        "for graphs served whole from inductor's on-disk caches."),
        {label: {name: split[label].get(key, 0.0) for name, key in PHASES} for label in labels})
