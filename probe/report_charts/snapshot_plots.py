"""`snapshot show FILE --plot OUT.svg` and `snapshot compare A B --plot OUT.svg`: a saved
session's latency timeline, and two sessions' latency CDFs per config on one axis."""

from __future__ import annotations

from pathlib import Path

from probe.analysis.stats import session_segments
from probe.common.terminal_text import terminal_text
from probe.report_charts.canvas import Caption, date_text, machine_text, save, warnings_to_log
from probe.report_charts.session_charts import latency_cdfs, latency_timeline
from probe.session_store.snapshot import read_document, saved_session


def session_caption(document: dict, path: str) -> Caption:
    """The session's machine, model and trace as it saved them, dated by its file."""
    def name(section: str) -> str:
        value = document.get(section, {}).get("name", "?")
        return terminal_text(value) if isinstance(value, str) else "?"
    return Caption(machine_text(document.get("environment", {})), name("model"), name("trace"),
                   "saved " + date_text(Path(path).stat().st_mtime))


def _joined(a: str, b: str) -> str:
    return a if a == b else f"A {a} / B {b}"


def plot_show(path: str, out: str) -> Path:
    document = read_document(path)
    # every label escaped before drawing: a font has no glyph for ESC, and matplotlib's
    # warning would carry it raw to stderr
    with warnings_to_log("snapshot show --plot"):
        chart = latency_timeline(saved_session(document, f"snapshot {path}", for_terminal=True),
                                 session_caption(document, path),
                                 title=f"Per-request latency: {terminal_text(Path(path).name)}")
    return save(chart, Path(out))


def plot_compare(path_a: str, path_b: str, out: str) -> Path:
    """Every config of A and of B as a CDF of its served latencies, each with its segment's
    p95 (the figure `snapshot compare` prints as "latency p95")."""
    latencies, marks, captions = {}, {}, []
    for side, path in (("A", path_a), ("B", path_b)):
        document = read_document(path)
        data = saved_session(document, f"snapshot {path}", for_terminal=True)
        captions.append(session_caption(document, path))
        for segment in session_segments(data):
            entry = data.configs.get(segment.config_id)
            label = f"{side} {segment.config_id}" + (f": {entry.options.label()}" if entry else "")
            latencies[label] = [r.latency_ms for r in data.records
                                if r.ok and r.config_id == segment.config_id]
            marks[label] = segment.latency_ms.p95
    a, b = captions
    caption = Caption(_joined(a.machine, b.machine), _joined(a.model, b.model),
                      _joined(a.trace, b.trace), _joined(a.date, b.date))
    with warnings_to_log("snapshot compare --plot"):
        chart = latency_cdfs(latencies, caption, name="compare", marks_ms=marks,
                             title=f"Latency CDF: A {terminal_text(Path(path_a).name)} vs B "
                                   f"{terminal_text(Path(path_b).name)}",
                             what="Every served request of each config (warm-up included); "
                                  "the filled mark: its segment's p95, as `snapshot compare` "
                                  "prints it.")
    return save(chart, Path(out))
