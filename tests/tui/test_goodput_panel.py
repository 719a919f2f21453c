"""With --slo, the throughput panel shows goodput and attainment beside throughput (the
window's, from probe/analysis/slo.py); without one it shows neither."""

from __future__ import annotations

import io
from dataclasses import replace

from rich.console import Console

from probe.analysis.live_figures import window_stats
from probe.analysis.slo import goodput
from probe.common.units import fmt_fraction
from probe.contract.objective import parse_slo
from tui.widgets.throughput import throughput_detail


def text(renderable, width: int = 120) -> str:
    console = Console(width=width, record=True, color_system=None, file=io.StringIO())
    console.print(renderable)
    return console.export_text()


def test_goodput_shows_beside_throughput_only_when_an_slo_is_set(stages):
    view = stages["steady"] if "steady" in stages else next(iter(stages.values()))
    assert "goodput" not in text(throughput_detail(view))
    slo = parse_slo("latency=1s")
    window = window_stats(view.recent[-50:], slo=slo)
    with_slo = replace(view, slo=slo, window=window)
    shown = text(throughput_detail(with_slo))
    assert "goodput" in shown and "latency=1s" in shown
    expected = goodput(view.recent[-50:], slo).slo_attainment
    assert f"SLO met {fmt_fraction(expected)}" in shown
