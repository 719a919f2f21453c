"""Segments: the previous and the current config side by side, one row each, with the drift
of each config's tokens from the fp32 eager reference beside its latency. The subtitle says
what drift counts, and that a preset's random weights overstate it."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.coordinate import Coordinate
from textual.reactive import reactive
from textual.widgets import DataTable

from probe.common.units import NO_DATA, fmt_bytes, fmt_count, fmt_ms, fmt_rate, fmt_ratio
from probe.contract.figures import DriftStats, SegmentStats
from probe.contract.live import LiveView
from tui import derive
from tui.format import fitting

DRIFT = "drift tok·req"
COLUMNS = ("config", "req", "p50", "p95", "p99", "TTFT95", "TPOT50", "tok/s", DRIFT, "comp",
           "recomp", "breaks", "graphs", "KV peak")
# Where a segment shown has J/token (probe/analysis/energy.py), after tok/s: the now row's
# with its ratio to the previous row's (B/A), as `snapshot compare` gives it. Below
# ENERGY_ROOM columns it takes the place of KV peak and graphs, which the KV and graph-break
# panels show too.
ENERGY = "J/token"
ENERGY_ROOM = 140
# Under NARROW_WIDTH columns: the short config name and the columns that tell the story.
NARROW_COLUMNS = ("config", "req", "p50", "p95", "p99", "TPOT50", "tok/s", DRIFT, "recomp")
NARROW_WIDTH = 100
# What the drift column counts, and why a preset's drift reads high (probe.analysis.drift's
# RANDOM_WEIGHTS_CAVEAT, shortened for the screen)
DRIFT_MEANS = "drift tok·req: tokens · requests equal to the fp32 eager reference's (sampled)"
CAVEATS = ("{means}; {model} has random weights: drift overstates a trained model's "
           "(--model PATH measures yours)",
           "{means}; {model}'s random weights overstate it",
           "drift vs fp32 eager: {model}'s random weights overstate it",
           "{model}: random weights overstate drift")


def fmt_drift(drift: DriftStats | None, narrow: bool = False) -> str:
    """Tokens equal · requests identical: "97.1%·62% n=8"; narrow "97%·62%"; "—" while none
    was sampled."""
    if drift is None:
        return NO_DATA
    exact = f"{drift.exact_match:.0%}"
    if narrow:
        return f"{drift.token_agreement:.0%}·{exact}"
    agree = "100%" if drift.token_agreement == 1 else f"{drift.token_agreement:.1%}"
    return f"{agree}·{exact} n={drift.sampled_requests}"


def waiting_text(stats: SegmentStats | None, narrow: bool = False) -> str | None:
    """The drift cell while no reference is computed yet: "n sampled, wait" (None: nothing
    waits, or drift is known)."""
    if stats is None or stats.drift is not None or not stats.drift_waiting:
        return None
    return f"⧗{stats.drift_waiting}" if narrow else f"{stats.drift_waiting} sampled, wait"


def segments_subtitle(view: LiveView, width: int) -> str:
    """What the drift column counts, and the caveat when the model has random weights; while
    the served config's drift is unknown because its references wait, why."""
    current = derive.segment(view, view.config_id)
    if waiting_text(current) is not None:
        assert current is not None
        return fitting(width, f"drift: {current.drift_waiting} sampled requests wait for their "
                              f"fp32 reference, decoded only when the queue empties (it has "
                              f"not yet)", f"drift: {current.drift_waiting} wait for an idle "
                              f"moment to compute their reference", "drift: waits for idle")
    if not derive.random_weights(view):
        return fitting(width, DRIFT_MEANS, "drift tok·req: equal to fp32 eager's")
    means = DRIFT_MEANS.removesuffix(" (sampled)")
    return fitting(width, *(c.format(means=means, model=view.model) for c in CAVEATS))


def segment_cells(view: LiveView, stats: SegmentStats | None, config_id: str,
                  role: str, narrow: bool = False) -> dict[str, str | Text]:
    name = f"{role} {config_id}"
    cells: dict[str, str | Text] = {name: NO_DATA for name in COLUMNS}
    cells["config"] = Text(name, style="bold" if role == "now" else "")
    if stats is None:
        return cells
    tokens = stats.tokens_per_s
    cells.update({
        "req": fmt_count(stats.requests), "p50": fmt_ms(stats.latency_ms.p50),
        "p95": fmt_ms(stats.latency_ms.p95), "p99": fmt_ms(stats.latency_ms.p99),
        "TTFT95": fmt_ms(stats.ttft_ms.p95), "TPOT50": fmt_ms(stats.tpot_ms.p50),
        "tok/s": NO_DATA if tokens is None else fmt_rate(tokens, "").strip(),
        DRIFT: waiting_text(stats, narrow) or fmt_drift(stats.drift, narrow),
        "comp": str(stats.compiles), "recomp": str(stats.recompiles),
        "breaks": str(stats.graph_breaks), "graphs": str(stats.graphs),
        "KV peak": fmt_bytes(stats.kv_cache_peak_bytes, NO_DATA)})
    return cells


def j_per_token(stats: SegmentStats | None) -> float | None:
    return None if stats is None or stats.energy is None else stats.energy.j_per_token


def energy_cells(rows: list[dict[str, str | Text]], shown: list[SegmentStats | None]) -> None:
    """The J/token cell of each row; the last (now) also its ratio to the one before."""
    values = [j_per_token(s) for s in shown]
    for index, (cells, value) in enumerate(zip(rows, values)):
        text = NO_DATA if value is None else f"{value:.3g}"
        before = values[index - 1] if index else None
        if value is not None and before:
            text += f" {fmt_ratio(value / before)}"
        cells[ENERGY] = text


def segments_columns(view: LiveView | None, width: int) -> tuple[str, ...]:
    """The columns for this width (0: not laid out yet, as wide); J/token after tok/s where
    a segment shown has one."""
    narrow = 0 < width < NARROW_WIDTH
    columns: tuple[str, ...] = NARROW_COLUMNS if narrow else COLUMNS
    if narrow or view is None or not any(j_per_token(s) is not None for s in shown_segments(view)):
        return columns
    if 0 < width < ENERGY_ROOM:
        columns = tuple(c for c in columns if c not in ("KV peak", "graphs"))
    at = columns.index("tok/s") + 1
    return columns[:at] + (ENERGY,) + columns[at:]


def shown_segments(view: LiveView) -> list[SegmentStats | None]:
    previous = derive.previous_config_id(view)
    return ([derive.segment(view, previous)] if previous is not None else []) + [
        derive.segment(view, view.config_id)]


def segments_title(view: LiveView) -> str:
    """The configs compared, with their labels (the rows name only their ids)."""
    now = f"{view.config_id} {derive.config_label(view, view.config_id)}"
    previous = derive.previous_config_id(view)
    if previous is None:
        return f"Segments: {now}"
    return f"Segments: {previous} {derive.config_label(view, previous)} → {now}"


def segment_rows(view: LiveView, narrow: bool = False) -> list[dict[str, str | Text]]:
    """The previous config's row (when there is one), then the current config's."""
    rows = []
    previous = derive.previous_config_id(view)
    if previous is not None:
        rows.append(segment_cells(view, derive.segment(view, previous), previous,
                                  "prev", narrow))
    rows.append(segment_cells(view, derive.segment(view, view.config_id),
                              view.config_id, "now", narrow))
    energy_cells(rows, shown_segments(view))
    return rows


class SegmentsPanel(Vertical):
    view: reactive[LiveView | None] = reactive(None)

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.border_title = "Segments"
        self._columns: tuple[str, ...] = ()
        self._drawn: object = None
        self._titles: tuple[str, str] = ("", "")

    def compose(self) -> ComposeResult:
        table: DataTable = DataTable(show_cursor=False, zebra_stripes=True)
        table.can_focus = False   # every key belongs to the dashboard
        yield table

    def on_resize(self) -> None:
        self.watch_view(self.view)

    def watch_view(self, view: LiveView | None) -> None:
        narrow = 0 < self.size.width < NARROW_WIDTH
        columns = segments_columns(view, self.size.width)
        rows = segment_rows(view, narrow) if view is not None else []
        if view is not None:
            titles = (segments_title(view),
                      segments_subtitle(view, max(self.size.width - 6, 20)))
            if titles != self._titles:     # setting a title repaints, even the same one
                self._titles = titles
                # Text: ids and the model's name are data, not markup
                self.border_title, self.border_subtitle = Text(titles[0]), Text(titles[1])
        if (columns, rows) == self._drawn:
            return
        self._drawn = (columns, rows)
        table = self.query_one(DataTable)
        if columns == self._columns and table.row_count == len(rows):
            # in place: clearing and refilling costs a relayout of the table
            for r, cells in enumerate(rows):
                for c, name in enumerate(columns):
                    if table.get_cell_at(Coordinate(r, c)) != cells[name]:
                        table.update_cell_at(Coordinate(r, c), cells[name], update_width=True)
        else:
            table.clear(columns=columns != self._columns)
            if columns != self._columns:
                table.add_columns(*columns)
                self._columns = columns
            for cells in rows:
                table.add_row(*(cells[name] for name in columns))
