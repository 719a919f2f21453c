"""Graph breaks: how many and at how many code locations, how many graphs dynamo made, and
each distinct reason with its code location, per config (the current one first)."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.text import Text

from probe.common.units import plural
from probe.contract.live import LiveView
from tui import derive
from tui.format import truncate_left
from tui.widgets.panel import Panel, Parts


def break_headline(view: LiveView, width: int = 80) -> Text:
    segment = derive.segment(view, view.config_id)
    breaks = segment.graph_breaks if segment else 0
    graphs = segment.graphs if segment else 0
    text = Text(plural(breaks, "break"), style="bold red" if breaks else "green")
    if segment and breaks:
        text.append(f" at {plural(segment.graph_break_sites, 'site')}", style="red")
    text.append(f" · {plural(graphs, 'graph')}")
    where = f" in {view.config_id}"
    if text.cell_len + len(where) <= width:
        text.append(where)
    text.no_wrap, text.overflow = True, "ellipsis"
    return text


def top_reason(view: LiveView) -> Text:
    breaks = [b for b in view.graph_breaks if b.config_id == view.config_id]
    if not breaks:
        return Text("no graph breaks in this config", style="dim")
    top = max(breaks, key=lambda b: b.count)
    text = Text(f"×{top.count} ", style="red")
    text.append(top.reason, style="")
    text.no_wrap, text.overflow = True, "ellipsis"
    return text


def break_reasons(view: LiveView, width: int = 80) -> RenderableType:
    """The current config's breaks with their reasons and locations; other configs' only as a
    count on one dim line (they are not what is served now)."""
    if not view.graph_breaks:
        return Text("no graph breaks", style="dim")
    breaks = sorted((b for b in view.graph_breaks if b.config_id == view.config_id),
                    key=lambda b: -b.count)
    lines: list[Text] = []
    if breaks:
        segment = derive.segment(view, view.config_id)
        sites = f" at {plural(segment.graph_break_sites, 'site')}" if segment else ""
        lines.append(Text(f"{view.config_id} {derive.config_label(view, view.config_id)}: "
                          f"{plural(sum(b.count for b in breaks), 'break')}{sites}",
                          style="bold", no_wrap=True, overflow="ellipsis"))
    else:
        lines.append(Text(f"no graph breaks in {view.config_id}", style="green"))
    for record in breaks:
        line = Text(f" ×{record.count} ", style="red", no_wrap=True, overflow="ellipsis")
        line.append(record.reason, style="")
        lines.append(line)
        lines.append(Text(f"    {truncate_left(record.location, width - 4)}",
                          style="dim", no_wrap=True, overflow="ellipsis"))
    others = earlier_breaks(view)
    if others:
        lines.append(Text(f"earlier: {others}", style="dim", no_wrap=True,
                          overflow="ellipsis"))
    return Group(*lines)


def earlier_breaks(view: LiveView) -> str:
    """The other configs' breaks as counts, newest first: "c3 1 break · c2 12 breaks at 6 sites"."""
    parts = []
    for config_id in sorted({b.config_id for b in view.graph_breaks} - {view.config_id},
                            reverse=True):                       # newest first
        total = sum(b.count for b in view.graph_breaks if b.config_id == config_id)
        segment = derive.segment(view, config_id)
        sites = f" at {plural(segment.graph_break_sites, 'site')}" if segment else ""
        parts.append(f"{config_id} {plural(total, 'break')}{sites}")
    return " · ".join(parts)


class GraphBreakPanel(Panel):
    TITLE = "Graph breaks"

    def render_key(self, view: LiveView) -> object:
        segment = derive.segment(view, view.config_id)
        return (view.graph_breaks, view.config_id, view.configs,
                segment.graphs if segment else 0)

    def render_parts(self, view: LiveView, width: int) -> Parts:
        return Parts(break_headline(view, width), break_reasons(view, width),
                     top_reason(view))
