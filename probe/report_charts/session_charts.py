"""Charts of a session's raw records: the per-request latency timeline (the dashboard's plot at
print quality) and latency CDFs per config. Both plot the records' own `latency_ms`, the values
probe/analysis/stats.py summarises."""

from __future__ import annotations

from typing import Mapping, Sequence

from probe.analysis.config_changes import config_changes
from probe.analysis.stats import COMPILING
from probe.contract.records import RequestRecord
from probe.contract.session import SessionData
from probe.report_charts.canvas import (
    Caption,
    Chart,
    finish,
    legend_row,
    log_scale,
    new_figure,
    style,
)

COMPILE_SHADE = {"facecolor": "#bbbbbb", "alpha": 0.35, "hatch": "///", "edgecolor": "#555555",
                 "linewidth": 0}


def _label(data: SessionData, config_id: str) -> str:
    entry = data.configs.get(config_id)
    return f"{config_id}: {entry.options.label()}" if entry else config_id


def latency_timeline(data: SessionData, caption: Caption, *, name: str = "timeline",
                     title: str = "Per-request latency over the session") -> Chart:
    """Each served request's latency at the time it finished, one marker and line style per
    config, log scale; a dashed line where the config changed, a hatched span per compile."""
    served = sorted((r for r in data.records if r.ok), key=lambda r: r.seq)
    order = list(dict.fromkeys(r.config_id for r in served))
    legend_lines = len(order) + 1
    figure, (axes, legend_axes) = new_figure(9.0, 4.6 + 0.26 * legend_lines, rows=2,
                                             height_ratios=(4.6, 0.26 * legend_lines))
    per_config: dict[str, dict[str, list[float]]] = {}
    for index, config_id in enumerate(order):
        mine = [r for r in served if r.config_id == config_id]
        series = {"t_s": [r.end_s for r in mine], "latency_ms": [r.latency_ms for r in mine]}
        per_config[config_id] = series
        line, = axes.plot(series["t_s"], series["latency_ms"], markersize=3.5, linewidth=0.8,
                          label=_label(data, config_id), **style(index))
        line.set_gid(f"series-{config_id}")
    spans = [(e.start_s, e.start_s + e.duration_s, e.kind, e.function) for e in data.events
             if e.kind in COMPILING and e.duration_s is not None]
    for n, (start, end, _, _) in enumerate(spans):
        axes.axvspan(start, end, label="compiling" if n == 0 else None, **COMPILE_SHADE)
    changes = [(c.t_s, c.config_id) for c in config_changes(data.records)]
    for n, (t_s, config_id) in enumerate(changes):
        axes.axvline(t_s, color="black", linestyle="--", linewidth=1.0)
        axes.annotate(f"→ {config_id}", (t_s, 1.0), xycoords=("data", "axes fraction"),
                      xytext=(2, -10 - 10 * (n % 3)), textcoords="offset points", fontsize=7.5,
                      bbox={"facecolor": "white", "edgecolor": "none", "pad": 0.5})
    log_scale(axes)
    axes.set_xlabel("session time at which the request finished (s)")
    axes.set_ylabel("latency, arrival to end (ms, log scale)")
    legend_row(legend_axes, axes)
    if not order:
        axes.text(0.5, 0.5, "no request was served", ha="center", transform=axes.transAxes)
    failed = sum(not r.ok for r in data.records)
    what = (f"{len(served)} served requests" + (f" ({failed} failed, not drawn)" if failed else "")
            + f", {len(spans)} compiles, {len(changes)} config changes")
    return finish(name, title, figure, caption.text(what + "; hatched: compiling"),
                  {"configs": per_config, "config_changes": changes, "compile_spans": spans})


def empirical_cdf(values: Sequence[float]) -> tuple[list[float], list[float]]:
    """The sorted values and the fraction of values at or below each: i / n."""
    ordered = sorted(values)
    n = len(ordered)
    return ordered, [(i + 1) / n for i in range(n)]


def latency_cdfs(latencies: Mapping[str, Sequence[float]], caption: Caption, *, name: str,
                 title: str, what: str,
                 marks_ms: Mapping[str, float | None] | None = None) -> Chart:
    """One CDF per config on one axis (latency in ms, log scale); `marks_ms` puts each
    config's reported p95 on its curve as a filled mark (`what` says which p95 it is)."""
    shown = {label: values for label, values in latencies.items() if values}
    figure, (axes, legend_axes) = new_figure(8.0, 4.4 + 0.26 * len(shown), rows=2,
                                             height_ratios=(4.4, 0.26 * max(len(shown), 1)))
    series: dict[str, dict] = {}
    for index, (label, values) in enumerate(shown.items()):
        xs, ys = empirical_cdf(values)
        look = style(index)
        line, = axes.step(xs, ys, where="post", linewidth=1.4, label=f"{label} (n={len(xs)})",
                          color=look["color"], linestyle=look["linestyle"],
                          marker=look["marker"] if len(xs) <= 12 else None, markersize=3.5,
                          fillstyle="none")
        line.set_gid(f"cdf-{index}")
        mark = (marks_ms or {}).get(label)
        if mark is not None:
            axes.plot([mark], [0.95], marker=look["marker"], color=look["color"],
                      markeredgecolor="black", markersize=6, linestyle="none")
        series[label] = {"latency_ms": xs, "fraction": ys, "p95_ms": mark}
    axes.axhline(0.95, color="#666666", linewidth=0.6, linestyle=":")
    log_scale(axes, "x")
    axes.set_ylim(0, 1.02)
    axes.set_xlabel("latency (ms, log scale)")
    axes.set_ylabel("fraction of requests at or below")
    legend_row(legend_axes, axes)
    return finish(name, title, figure, caption.text(what), series)


def warm_latencies(records: Sequence[RequestRecord], config_id: str | None = None
                   ) -> dict[str, list[float]]:
    """A bench run's served latencies by warm pass ("pass 1/2" …), of one config or all."""
    passes: dict[str, list[float]] = {}
    for record in records:
        _, _, label = record.id.partition("@")
        if (label.startswith("pass") and record.ok
                and (config_id is None or record.config_id == config_id)):
            passes.setdefault(label.split(" [")[0], []).append(record.latency_ms)
    return passes
