"""What `snapshot show`, `compare` and `doctor` say of an imported session: which tool measured
it, what each figure means there, and the summary figures it saved. The `imported` section is
free-form to a reader (a file could hold anything there): what is not of the expected shape
is left out, never a traceback."""

from __future__ import annotations

from typing import Any

from probe.common.terminal_text import terminal_text

IMPORTED = "imported"
SHOWN = 12      # a run's summary metrics printed; the rest stay in the session's section
# a metric's statistics printed, where it has them ("request_latency.p95")
STATS = ("avg", "mean", "median", "p50", "p95", "p99", "max")


def _section(document: dict[str, Any]) -> dict[str, Any] | None:
    section = document.get(IMPORTED)
    return section if isinstance(section, dict) else None


def _text(value: Any) -> str:
    return terminal_text(str(value)) if isinstance(value, (str, int, float)) else "?"


def imported_header(document: dict[str, Any]) -> list[str]:
    """One line under a session's header: "imported from AIPerf 0.3.0 (profile_export.jsonl):
    the client's figures" (nothing for infertop's own sessions)."""
    section = _section(document)
    if section is None:
        return []
    version = f" {_text(section['version'])}" if section.get("version") else ""
    kept = "per-request records" if section.get("per_request") else "summary figures only"
    return [f"  imported from {_text(section.get('tool'))}{version} "
            f"({_text(section.get('format'))}): the client's figures, {kept}; queue, "
            f"compile, encoder, decoder and KV figures are not measured (0)"]


def imported_lines(document: dict[str, Any]) -> list[str]:
    """The figures' meanings and each run's summary, for `snapshot show` and `doctor`."""
    section = _section(document)
    if section is None:
        return []
    lines = ["", "what the imported figures are:"]
    figures = section.get("figures")
    for name, means in (figures.items() if isinstance(figures, dict) else ()):
        lines.append(f"  {_text(name)}: {_text(means)}")
    runs = section.get("runs")
    for config_id, run in (runs.items() if isinstance(runs, dict) else ()):
        if not isinstance(run, dict):
            continue
        skipped = run.get("skipped")
        left = ", ".join(f"{_text(k)} {_text(v)}" for k, v in skipped.items()) \
            if isinstance(skipped, dict) and skipped else ""
        lines.append(f"{_text(config_id)} ({_text(run.get('name'))})"
                     + (f": left out {left}" if left else "") + " — the tool's own summary:")
        summary = run.get("summary")
        groups = _grouped([f for f in (summary if isinstance(summary, list) else ())
                           if isinstance(f, dict)])
        shown = [f"  {name}: {', '.join(stats)}" + (f"  ({means})" if means else "")
                 for name, (stats, means) in list(groups.items())[:SHOWN]]
        more = len(groups) - SHOWN
        lines += (shown + ([f"  … {more} more in imported.runs.{_text(config_id)}.summary"]
                           if more > 0 else [])) or ["  none saved"]
    return lines


def _grouped(figures: list[dict[str, Any]]) -> dict[str, tuple[list[str], str]]:
    """"metric.stat" figures as one line a metric: its STATS with their unit; a figure with
    no statistic in its name is a line of its own."""
    groups: dict[str, tuple[list[str], str]] = {}
    for figure in figures:
        name = _text(figure.get("name"))
        metric, _, stat = name.rpartition(".")
        if not metric:
            metric, stat = name, ""
        stats, _ = groups.setdefault(metric, ([], _text(figure.get("means") or "")))
        if not stat or stat in STATS:
            value = f"{_number(figure.get('value'))} {_text(figure.get('unit'))}"
            stats.append(f"{stat} {value}" if stat else value)
    return {name: entry for name, entry in groups.items() if entry[0]}


def _number(value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return "?"
    return f"{value:,}" if isinstance(value, int) else f"{value:.4g}"


def imported_label(document: dict[str, Any], config_id: str) -> str | None:
    """An imported config's label: the tool and its run ("AIPerf profiling"), not infertop's
    options, which it never served with; None for infertop's own configs."""
    section = _section(document)
    runs = section.get("runs") if section else None
    run = runs.get(config_id) if isinstance(runs, dict) else None
    if not isinstance(run, dict) or section is None:
        return None
    return f"{_text(section.get('tool'))} {_text(run.get('name'))}"
