"""How a report's markdown links its figures (report.json `files.figures`): an image line per
figure under its section, which GitHub renders and html_report inlines. No matplotlib here."""

from __future__ import annotations

from typing import Mapping

ACROSS_RUNS = "runs"       # figures of no one section, shown after the sections


def figure_lines(figures: Mapping, section_id: str | None) -> list[str]:
    """The section's figures as markdown images, the SVG linked (its PNG named beside it)."""
    lines = []
    for figure in figures.get("figures") or []:
        if figure.get("section") == section_id:
            lines += [f"![{figure['title']}]({figure['svg']})", "",
                      f"*{figure['title']}: [SVG]({figure['svg']}), [PNG]({figure['png']})*", ""]
    return lines


def figure_file_lines(figures: Mapping) -> list[str]:
    """The Files section's lines about the charts: written, skipped, or why there are none."""
    if figures.get("unavailable"):
        return [f"- no figures: {figures['unavailable']}"]
    lines = []
    if figures.get("figures"):
        lines += ["- `figures/*.svg`, `figures/*.png`: the charts, from these numbers",
                  "- `report.html`: this report in one page, every chart inline (opens from "
                  "disk, no network)"]
    lines += [f"- a chart that could not be drawn: {reason}" for reason in
              figures.get("skipped") or []]
    return lines
