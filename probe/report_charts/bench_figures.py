"""A bench report's charts: which chart goes with which section, drawn from report.json and
the runs' snapshots beside it, written to DIR/figures as SVG and PNG."""

from __future__ import annotations

import logging
import warnings
from dataclasses import asdict, dataclass
from functools import partial
from pathlib import Path
from typing import Callable, Iterator, Mapping

from probe.report_charts.bench_charts import (
    compile_split,
    e6_waterfall,
    e7_curves,
    e8_curves,
    kv_held_vs_used,
    padding_waste,
    rate_curves,
    roofline_bars,
)
from probe.report_charts.canvas import (
    Caption,
    Chart,
    ChartsUnavailable,
    date_text,
    machine_text,
    require_matplotlib,
    save_both,
)
from probe.report_charts.markdown import ACROSS_RUNS
from probe.report_charts.session_charts import latency_cdfs, latency_timeline, warm_latencies
from probe.session_store.snapshot import read_document, session_data

log = logging.getLogger(__name__)
CDF_SECTIONS = ("E1", "E3", "E4", "E5", "E6")
TIMELINE_SECTIONS = ("E1", "E3")


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


def section_cdf(section: Mapping, snapshots: Snapshots, caption: Caption) -> Chart | None:
    """A section's configs' warm latencies, as CDFs on one axis, each with its reported p95."""
    latencies, marks = {}, {}
    for role, config in _served_configs(section):
        data = snapshots.session(config["snapshot"])
        config_id = snapshots.config_id(data, config.get("label", ""))
        passes = warm_latencies(data.records, config_id)
        shown = config.get("label", "")
        label = role if role == shown or len(shown) > 60 else f"{role}: {shown}"
        latencies[label] = [v for values in passes.values() for v in values]
        marks[label] = (config.get("latency_p95_ms") or {}).get("median")
    if not latencies:
        return None
    sid = section.get("id")
    return latency_cdfs(latencies, caption, name=f"cdf_{sid}",
                        title=f"{sid} — warm latency CDF per config", marks_ms=marks,
                        what="Every request of every warm pass (the warm-up pass left out); "
                             "the filled mark on each curve: the report's warm p95, the median "
                             "of the passes' p95.")


def section_timeline(section: Mapping, snapshots: Snapshots, caption: Caption) -> Chart | None:
    """The session of the section's first compiled config: warm-up, then the warm passes."""
    for role, config in _served_configs(section):
        if (config.get("options") or {}).get("compile", "off") != "off":
            data = snapshots.session(config["snapshot"])
            sid = section.get("id")
            return latency_timeline(data, caption, name=f"timeline_{sid}",
                                    title=f"{sid} — per-request latency, {role} "
                                          f"({config.get('label')})")
    return None


def bench_charts(out: Path, report: Mapping) -> Iterator[tuple[str, Callable[[], Chart | None]]]:
    """(section id, a function drawing one chart) for every chart this report has data for."""
    caption = report_caption(report)
    snapshots = Snapshots(out)
    sections = report.get("experiments") or {}
    for sid, section in sections.items():
        if section.get("error"):
            continue
        if sid in TIMELINE_SECTIONS:
            yield sid, partial(section_timeline, section, snapshots, caption)
        if sid in CDF_SECTIONS:
            yield sid, partial(section_cdf, section, snapshots, caption)
        if sid == "E4":
            yield sid, partial(padding_waste, section, caption)
        if sid == "E6":
            yield sid, partial(e6_waterfall, section, caption)
        if sid == "E7" and isinstance((report.get("runs") or {}).get("E7"), Mapping):
            yield sid, lambda: rate_curves(e7_curves(report["runs"]["E7"]), caption,
                                           name="rate_E7", title="E7 — p95 against offered rate")
        if sid == "E8":
            trace = ((report.get("runs") or {}).get("E8") or {}).get("trace", "chat")
            yield sid, partial(rate_curves, e8_curves(section, trace), caption, name="rate_E8",
                               title="E8 — p95 against offered rate")
            yield sid, partial(kv_held_vs_used, section, caption)
        if sid == "roofline" and (section.get("configs") or {}).get("roofline_ms_per_token"):
            yield sid, partial(roofline_bars, section, caption)
    if any(isinstance(r, Mapping) and r.get("compile_phases")
           for r in (report.get("runs") or {}).values()):
        yield ACROSS_RUNS, lambda: compile_split(report["runs"], caption)


def write_bench_figures(out: Path, report: Mapping) -> dict:
    """Every chart into out/figures (SVG and PNG); report.json `files.figures`: the figures
    written and the charts that could not be drawn (and why). A chart that fails is skipped,
    not fatal: the report's numbers matter more than its pictures."""
    written, skipped = [], []
    for sid, draw in bench_charts(out, report):
        try:
            with warnings.catch_warnings(record=True) as caught:   # the log's, not the terminal's
                warnings.simplefilter("always")
                chart = draw()
                if chart is not None:
                    svg, png = save_both(chart, out / "figures")
            for warning in caught:
                log.warning("chart of %s: %s", sid, warning.message)
            if chart is not None:
                written.append(FigureFile(sid, chart.name, chart.title, str(svg.relative_to(out)),
                                          str(png.relative_to(out))).as_dict())
        except Exception as exc:  # one chart's failure costs that chart only
            log.debug("chart of %s failed", sid, exc_info=True)
            skipped.append(f"{sid}: {type(exc).__name__}: {exc}")
    return {"figures": written, "skipped": skipped}


def figures_or_reason(out: Path, report: Mapping) -> dict:
    """write_bench_figures, or why there are no figures (matplotlib missing: the extra)."""
    try:
        require_matplotlib()
    except ChartsUnavailable as exc:
        return {"figures": [], "skipped": [], "unavailable": str(exc)}
    return write_bench_figures(out, report)
