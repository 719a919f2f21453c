"""matplotlib, imported only when a chart is drawn: a headless figure (matplotlib.figure.Figure
on the Agg canvas, never pyplot, so no global figure state), styles that read in black and
white, the caption every chart carries, and writing a chart as SVG or PNG."""

from __future__ import annotations

import datetime as dt
import logging
import math
import textwrap
import warnings
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

from probe.common.atomic import replace_atomically
from probe.common.errors import BadInput
from probe.common.terminal_text import terminal_text

log = logging.getLogger(__name__)

INSTALL_HINT = "pip install 'infertop[plots]'"
# Okabe–Ito: told apart by colour-blind readers; the line style, marker and hatch that go with
# each tell them apart in black and white.
COLORS = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000")
LINE_STYLES = ("-", "--", ":", "-.", (0, (5, 1, 1, 1, 1, 1)), (0, (1, 3)), (0, (8, 2)))
MARKERS = ("o", "s", "^", "D", "v", "X", "P")
# lines only: dots and circles are drawn as thousands of SVG paths
HATCHES = ("", "///", "xxx", "\\\\\\", "---", "+++", "|||")
RC = {"svg.fonttype": "none", "font.size": 9, "axes.titlesize": 10,
      "axes.grid": True, "grid.alpha": 0.35, "grid.linewidth": 0.6, "legend.fontsize": 8,
      "legend.framealpha": 0.9, "savefig.dpi": 120}
# SVG metadata left out: the file is the same for the same numbers (and names no URL)
NO_METADATA = {"Date": None, "Creator": None, "Format": None, "Type": None}


class ChartsUnavailable(BadInput):
    """matplotlib is not installed: the charts cannot be drawn."""


def _matplotlib():
    try:
        import matplotlib
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        raise ChartsUnavailable(f"charts need matplotlib, which is not installed "
                                f"(`{INSTALL_HINT}`)") from None
    return matplotlib, Figure, FigureCanvasAgg


def require_matplotlib() -> None:
    """ChartsUnavailable, with the extra to install, unless matplotlib can be imported."""
    _matplotlib()


def style(index: int) -> dict[str, Any]:
    """The index-th series' colour, line style and marker (matplotlib keyword arguments)."""
    return {"color": COLORS[index % len(COLORS)],
            "linestyle": LINE_STYLES[index % len(LINE_STYLES)],
            "marker": MARKERS[index % len(MARKERS)]}


def bar_style(index: int) -> dict[str, Any]:
    """The index-th bar series' fill and hatch, outlined in black."""
    return {"color": COLORS[index % len(COLORS)], "hatch": HATCHES[index % len(HATCHES)],
            "edgecolor": "black", "linewidth": 0.6}


@dataclass(frozen=True)
class Caption:
    """Where the numbers come from: printed under every chart."""
    machine: str
    model: str
    trace: str
    date: str

    def text(self, what: str) -> str:
        return (f"{what}\nmachine: {self.machine} · model: {self.model} · trace: {self.trace}"
                f" · {self.date}")


def machine_text(environment: Mapping[str, Any]) -> str:
    """"cpu (x86_64, 2 CPUs), torch 2.14.1" from a report's or a session's environment."""
    device, name = environment.get("device", "?"), environment.get("device_name")
    cpus = environment.get("cpu_count")
    inside = ", ".join(str(p) for p in (name, f"{cpus} CPUs" if cpus else None) if p)
    torch = environment.get("torch")
    return f"{device}" + (f" ({inside})" if inside else "") + (f", torch {torch}" if torch else "")


def date_text(iso_or_unix: str | float | None) -> str:
    """A UTC date and time from an ISO string or Unix seconds; "date unknown" without one."""
    if iso_or_unix is None:
        return "date unknown"
    if isinstance(iso_or_unix, (int, float)):
        moment = dt.datetime.fromtimestamp(iso_or_unix, dt.timezone.utc)
    else:
        moment = dt.datetime.fromisoformat(iso_or_unix)
    return moment.strftime("%Y-%m-%d %H:%M UTC")


@dataclass(frozen=True)
class Chart:
    """A drawn chart: its file stem, title, the figure, and the series it plotted by name
    (the numbers exactly as they were handed to matplotlib)."""
    name: str
    title: str
    figure: Any
    series: Mapping[str, Any]


def new_figure(width_in: float = 8.0, height_in: float = 4.5, *, rows: int = 1, cols: int = 1,
               height_ratios: Sequence[float] | None = None):
    """(figure, axes): a figure of its own on the Agg canvas, nothing registered globally."""
    matplotlib, Figure, FigureCanvasAgg = _matplotlib()
    with matplotlib.rc_context(RC):
        figure = Figure(figsize=(width_in, height_in), layout="constrained")
        FigureCanvasAgg(figure)
        axes = figure.subplots(rows, cols, squeeze=False, height_ratios=height_ratios)
    return figure, [a for row in axes for a in row]


def log_scale(axes, which: str = "y") -> None:
    """A log axis labelled in plain numbers (100, 1000, 0.05), minor ticks labelled too when
    the data spans less than a decade (else a short range shows no label at all)."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter
    axis = axes.yaxis if which == "y" else axes.xaxis
    (axes.set_yscale if which == "y" else axes.set_xscale)("log")
    plain = FuncFormatter(lambda value, _: f"{value:g}")
    axis.set_major_formatter(plain)
    low, high = axes.get_ylim() if which == "y" else axes.get_xlim()
    decades = high / low if low > 0 else math.inf
    axis.set_minor_locator(LogLocator(subs=(2, 3, 5) if decades < 10 else (2, 5)))
    axis.set_minor_formatter(plain if decades < 1000 else NullFormatter())


def legend_row(legend_axes, handles_from) -> None:
    """The legend of `handles_from` in an axes of its own under the plot (a long legend would
    cover the data inside it, or squeeze the plot beside it)."""
    handles, labels = handles_from.get_legend_handles_labels()
    legend_axes.axis("off")
    if not handles:
        return
    width = int(legend_axes.figure.get_figwidth() * 11)       # characters of 8 pt text
    labels = [textwrap.shorten(label, width, placeholder=" …") for label in labels]
    columns = 1 if max((len(label) for label in labels), default=0) > 45 else 2
    legend_axes.legend(handles, labels, loc="upper left", ncols=columns, frameon=False,
                       borderaxespad=0)


def finish(name: str, title: str, figure, caption: str, series: Mapping[str, Any]) -> Chart:
    """Title above, the caption below wrapped to the figure's width."""
    width = int(figure.get_figwidth() * 17)          # characters of 7.5 pt text per line
    wrapped = "\n".join(textwrap.fill(line, width) for line in caption.splitlines())
    figure.suptitle(title, fontweight="bold")
    figure.supxlabel(wrapped, fontsize=7.5, color="#333333", ha="left", x=0.01)
    return Chart(name, title, figure, dict(series))


@contextmanager
def warnings_to_log(what: str) -> Iterator[None]:
    """matplotlib's warnings while a chart is drawn ("Glyph 27 missing from font") go to the
    log, escaped, never to the terminal: they quote the label's characters raw."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield
    for warning in caught:
        log.warning("%s: %s", what, terminal_text(warning.message))


def save(chart: Chart, path: Path) -> Path:
    """Write the chart as SVG or PNG, by the path's suffix; the folder is made."""
    kind = path.suffix.lower().lstrip(".")
    if kind not in ("svg", "png"):
        raise BadInput(f"{path}: a chart is written as .svg or .png, "
                          f"not {path.suffix or 'no suffix'}")
    matplotlib, _, _ = _matplotlib()
    path.parent.mkdir(parents=True, exist_ok=True)

    def write(tmp_name: str) -> None:
        # a salt per chart: clip-path ids differ between charts inlined in one HTML page
        with matplotlib.rc_context({**RC, "svg.hashsalt": chart.name}), \
                warnings_to_log(f"chart {chart.name}"):
            chart.figure.savefig(tmp_name, format=kind,
                                 metadata=NO_METADATA if kind == "svg" else None)
    return replace_atomically(path, write)


def save_both(chart: Chart, folder: Path) -> tuple[Path, Path]:
    return save(chart, folder / f"{chart.name}.svg"), save(chart, folder / f"{chart.name}.png")
