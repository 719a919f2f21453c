"""`snapshot show FILE --plot OUT` and `snapshot compare A B --plot OUT`: the chart of the saved
sessions, its series the sessions' own records; a bad --plot is refused before anything runs."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from infertop.cli import main
from probe.analysis.stats import session_segments
from probe.session_store.snapshot import read_document, session_data

pytest.importorskip("matplotlib")
SESSIONS = Path(__file__).resolve().parents[2] / "screenshots" / "sessions"


def test_show_plot_draws_the_sessions_timeline(tmp_path, capsys) -> None:
    (tmp_path / "deep").mkdir()      # the folder rule of every output: it must exist
    out = tmp_path / "deep" / "timeline.svg"
    assert main(["snapshot", "show", str(SESSIONS / "3-bucketing.json"), "--plot", str(out)]) == 0
    assert f"wrote {out}" in capsys.readouterr().out
    ids = {e.get("id") for e in ET.parse(out).getroot().iter()}
    data = session_data(read_document(SESSIONS / "3-bucketing.json"))
    assert {f"series-{cid}" for cid in {r.config_id for r in data.records if r.ok}} <= ids


def test_compare_plot_draws_a_cdf_per_config_of_both(tmp_path) -> None:
    from probe.report_charts.snapshot_plots import plot_compare
    a, b = SESSIONS / "1-baseline.json", SESSIONS / "3-bucketing.json"
    assert main(["snapshot", "compare", str(a), str(b), "--plot", str(tmp_path / "c.png")]) == 0
    assert (tmp_path / "c.png").read_bytes()[:4] == b"\x89PNG"
    ET.parse(plot_compare(str(a), str(b), str(tmp_path / "c.svg")))


def test_compare_series_are_the_segments_records(tmp_path, monkeypatch) -> None:
    from probe.report_charts import snapshot_plots
    drawn = {}
    real = snapshot_plots.latency_cdfs

    def keep(latencies, caption, **kwargs):
        chart = real(latencies, caption, **kwargs)
        drawn.update(chart.series)
        return chart
    a, b = SESSIONS / "1-baseline.json", SESSIONS / "3-bucketing.json"
    monkeypatch.setattr(snapshot_plots, "latency_cdfs", keep)
    snapshot_plots.plot_compare(str(a), str(b), str(tmp_path / "c.svg"))
    for side, path in (("A", a), ("B", b)):
        data = session_data(read_document(path))
        for segment in session_segments(data):
            label = next(k for k in drawn if k.startswith(f"{side} {segment.config_id}:"))
            assert drawn[label]["p95_ms"] == segment.latency_ms.p95
            assert drawn[label]["latency_ms"] == sorted(
                r.latency_ms for r in data.records if r.ok and r.config_id == segment.config_id)


@pytest.mark.parametrize("plot, message", [("x.pdf", "written as .svg or .png"),
                                           ("nowhere/x.svg", None)])
def test_a_bad_plot_is_refused_before_the_table(tmp_path, capsys, plot, message) -> None:
    target = tmp_path / plot
    if message is None:                    # a folder that is a file: cannot be made
        (tmp_path / "nowhere").write_text("")
    code = main(["snapshot", "show", str(SESSIONS / "1-baseline.json"), "--plot", str(target)])
    captured = capsys.readouterr()
    assert code == 2 and captured.out == "" and captured.err.count("\n") == 1
    assert "--plot" in captured.err and (message is None or message in captured.err)


def test_a_session_with_nothing_served_still_draws_and_says_so(tmp_path) -> None:
    from probe.contract.session import SessionData
    from probe.report_charts.canvas import Caption, save
    from probe.report_charts.session_charts import latency_cdfs, latency_timeline
    caption = Caption("cpu", "t5-tiny", "chat", "today")
    chart = latency_timeline(SessionData(), caption)
    assert chart.series == {"configs": {}, "config_changes": [], "compile_spans": []}
    ET.parse(save(chart, tmp_path / "t.svg"))
    assert "no request was served" in (tmp_path / "t.svg").read_text()
    empty = latency_cdfs({"c1": []}, caption, name="c", title="t", what="w")
    assert empty.series == {}
    ET.parse(save(empty, tmp_path / "c.svg"))
