"""Graph breaks: how many and at how many code locations, how many graphs dynamo made, and
each distinct reason with its code location, per config (the current one first)."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.text import Text

from probe.live import LiveSnapshot
from tui import derive
from tui.format import plural, truncate_left
from tui.widgets.panel import Panel, Parts


def break_headline(snapshot: LiveSnapshot, width: int = 80) -> Text:
    segment = derive.segment(snapshot, snapshot.config_id)
    breaks = segment.graph_breaks if segment else 0
    graphs = segment.graphs if segment else 0
    text = Text(plural(breaks, "break"), style="bold red" if breaks else "green")
    if segment and breaks:
        text.append(f" at {plural(segment.graph_break_sites, 'site')}", style="red")
    text.append(f" · {plural(graphs, 'graph')}")
    where = f" in {snapshot.config_id}"
    if text.cell_len + len(where) <= width:
        text.append(where)
    text.no_wrap, text.overflow = True, "ellipsis"
    return text


def top_reason(snapshot: LiveSnapshot) -> Text:
    breaks = [b for b in snapshot.graph_breaks if b.config_id == snapshot.config_id]
    if not breaks:
        return Text("no graph breaks in this config", style="dim")
    top = max(breaks, key=lambda b: b.count)
    text = Text(f"×{top.count} ", style="red")
    text.append(top.reason, style="")
    text.no_wrap, text.overflow = True, "ellipsis"
    return text


def break_reasons(snapshot: LiveSnapshot, width: int = 80) -> RenderableType:
    if not snapshot.graph_breaks:
        return Text("no graph breaks", style="dim")
    config_ids = [snapshot.config_id] + sorted(
        {b.config_id for b in snapshot.graph_breaks} - {snapshot.config_id}, reverse=True)
    lines: list[Text] = []
    for config_id in config_ids:
        breaks = sorted((b for b in snapshot.graph_breaks if b.config_id == config_id),
                        key=lambda b: -b.count)
        if not breaks:
            continue
        total = sum(b.count for b in breaks)
        segment = derive.segment(snapshot, config_id)
        sites = f" at {plural(segment.graph_break_sites, 'site')}" if segment else ""
        lines.append(Text(f"{config_id} {derive.config_label(snapshot, config_id)}: "
                          f"{plural(total, 'break')}{sites}",
                          style="bold", no_wrap=True, overflow="ellipsis"))
        for record in breaks:
            line = Text(f" ×{record.count} ", style="red", no_wrap=True, overflow="ellipsis")
            line.append(record.reason, style="")
            lines.append(line)
            lines.append(Text(f"    {truncate_left(record.location, width - 4)}",
                              style="dim", no_wrap=True, overflow="ellipsis"))
    return Group(*lines)


class GraphBreakPanel(Panel):
    TITLE = "Graph breaks"

    def render_key(self, snapshot: LiveSnapshot) -> object:
        segment = derive.segment(snapshot, snapshot.config_id)
        return (snapshot.graph_breaks, snapshot.config_id, snapshot.configs,
                segment.graphs if segment else 0)

    def render_parts(self, snapshot: LiveSnapshot, width: int) -> Parts:
        return Parts(break_headline(snapshot, width), break_reasons(snapshot, width),
                     top_reason(snapshot))
