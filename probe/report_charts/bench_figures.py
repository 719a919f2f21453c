"""A bench report's charts: each experiment names its own (its `figures`, given here by id),
drawn from report.json and the runs' snapshots beside it, written to DIR/figures as SVG and
PNG; the compile split across runs is the report's own."""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass
from functools import partial
from pathlib import Path
from typing import Callable, Iterator, Mapping, Sequence

from probe.report_charts.bench_charts import RateCurve, compile_split, rate_curves
from probe.report_charts.canvas import (
    Caption,
    Chart,
    ChartsUnavailable,
    date_text,
    machine_text,
    require_matplotlib,
    save_both,
    warnings_to_log,
)
from probe.report_charts.markdown import ACROSS_RUNS
from probe.report_charts.session_charts import latency_cdfs, latency_timeline, warm_latencies
from probe.session_store.snapshot import read_document, session_data

log = logging.getLogger(__name__)
Draw = Callable[[], "Chart | None"]


@dataclass(frozen=True)
class FigureFile:
    section: str        # the section id it is shown with, or ACROSS_RUNS
    name: str
    title: str
    svg: str            # relative to the report's folder
    png: str

    def as_dict(self) -> dict:
        return asdict(self)


def report_caption(report: Mapping) -> Caption:
    settings = report.get("settings") or {}
    return Caption(machine_text(report.get("environment") or {}), str(settings.get("model")),
                   str(settings.get("trace")), date_text(report.get("created")))


class Snapshots:
    """The runs' session snapshots, each read once."""

    def __init__(self, out: Path) -> None:
        self.out = out
        self._read: dict[str, object] = {}

    def session(self, relative: str):
        if relative not in self._read:
            self._read[relative] = session_data(read_document(self.out / relative))
        return self._read[relative]

    def config_id(self, data, label: str) -> str | None:
        """The snapshot's config that served `label` (a group snapshot holds several)."""
        ids = [cid for cid, entry in data.configs.items() if entry.options.label() == label]
        return ids[0] if ids else (next(iter(data.configs)) if len(data.configs) == 1 else None)


def _served_configs(section: Mapping) -> Iterator[tuple[str, Mapping]]:
    for role, config in (section.get("configs") or {}).items():
        if isinstance(config, Mapping) and config.get("snapshot") and "error" not in config:
            yield role, config


@dataclass(frozen=True)
class SectionCharts:
    """What one section's charts are drawn from: the section, its report and the snapshots."""
    section: Mapping
    report: Mapping
    snapshots: Snapshots
    caption: Caption

    @property
    def runs(self) -> Mapping:
        """report.json `runs.<id>`: an open-loop experiment's results ({} when absent)."""
        runs = (self.report.get("runs") or {}).get(self.section.get("id"))
        return runs if isinstance(runs, Mapping) else {}

    def cdf(self) -> Chart | None:
        """The section's configs' warm latencies, as CDFs on one axis, each with its p95."""
        latencies, marks = {}, {}
        for role, config in _served_configs(self.section):
            data = self.snapshots.session(config["snapshot"])
            config_id = self.snapshots.config_id(data, config.get("label", ""))
            passes = warm_latencies(data.records, config_id)
            shown = config.get("label", "")
            label = role if role == shown or len(shown) > 60 else f"{role}: {shown}"
            latencies[label] = [v for values in passes.values() for v in values]
            marks[label] = (config.get("latency_p95_ms") or {}).get("median")
        if not latencies:
            return None
        sid = self.section.get("id")
        return latency_cdfs(latencies, self.caption, name=f"cdf_{sid}",
                            title=f"{sid} — warm latency CDF per config", marks_ms=marks,
                            what="Every request of every warm pass (the warm-up pass left "
                                 "out); the filled mark on each curve: the report's warm p95, the "
                                 "median of the passes' p95.")

    def timeline(self) -> Chart | None:
        """The session of the section's first compiled config: warm-up, then the warm passes."""
        for role, config in _served_configs(self.section):
            if (config.get("options") or {}).get("compile", "off") != "off":
                data = self.snapshots.session(config["snapshot"])
                sid = self.section.get("id")
                return latency_timeline(data, self.caption, name=f"timeline_{sid}",
                                        title=f"{sid} — per-request latency, {role} "
                                              f"({config.get('label')})")
        return None

    def of(self, chart: Callable[[Mapping, Caption], Chart]) -> Draw:
        """A chart of the section alone (bench_charts.padding_waste, e6_waterfall, …)."""
        return partial(chart, self.section, self.caption)

    def rate(self, curves: Callable[[], Mapping[str, Sequence[RateCurve]]]) -> Draw:
        """p95 against offered rate, from the curves read when it is drawn."""
        sid = self.section.get("id")
        return lambda: rate_curves(curves(), self.caption, name=f"rate_{sid}",
                                   title=f"{sid} — p95 against offered rate")


SectionFigures = Callable[[SectionCharts], Sequence[Draw]]     # an experiment's `figures`


def bench_charts(out: Path, report: Mapping, figures: Mapping[str, SectionFigures]
                 ) -> Iterator[tuple[str, Draw]]:
    """(section id, a function drawing one chart) for every chart this report has data for:
    each section's from its experiment's `figures`, then the compile split across runs."""
    caption = report_caption(report)
    snapshots = Snapshots(out)
    for sid, section in (report.get("experiments") or {}).items():
        if not section.get("error") and sid in figures:
            for draw in figures[sid](SectionCharts(section, report, snapshots, caption)):
                yield sid, draw
    if any(isinstance(r, Mapping) and r.get("compile_phases")
           for r in (report.get("runs") or {}).values()):
        yield ACROSS_RUNS, lambda: compile_split(report["runs"], caption)


def write_bench_figures(out: Path, report: Mapping, figures: Mapping[str, SectionFigures]) -> dict:
    """Every chart into out/figures (SVG and PNG); report.json `files.figures`: the figures
    written and the charts that could not be drawn (and why). A chart that fails is skipped,
    not fatal: the report's numbers matter more than its pictures."""
    written, skipped = [], []
    for sid, draw in bench_charts(out, report, figures):
        try:
            with warnings_to_log(f"chart of {sid}"):
                chart = draw()
                if chart is not None:
                    svg, png = save_both(chart, out / "figures")
            if chart is not None:
                written.append(FigureFile(sid, chart.name, chart.title, str(svg.relative_to(out)),
                                          str(png.relative_to(out))).as_dict())
        except Exception as exc:  # one chart's failure costs that chart only
            log.debug("chart of %s failed", sid, exc_info=True)
            skipped.append(f"{sid}: {type(exc).__name__}: {exc}")
    return {"figures": written, "skipped": skipped}


def figures_or_reason(out: Path, report: Mapping, figures: Mapping[str, SectionFigures]) -> dict:
    """write_bench_figures, or why there are no figures (matplotlib missing: the extra)."""
    try:
        require_matplotlib()
    except ChartsUnavailable as exc:
        return {"figures": [], "skipped": [], "unavailable": str(exc)}
    return write_bench_figures(out, report, figures)
