"""The bench's charts, from a recorded `bench --quick` folder (E1, E3, E4, E8 on t5-tiny,
tests/fixtures/bench-quick) and from a synthetic one with every section: each chart is
written, parses as SVG, and plotted exactly the numbers report.json and the runs' snapshots
hold; report.md links every chart and report.html holds every one inline, fetching nothing."""

from __future__ import annotations

import json
import shutil
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

from probe.analysis.stats import COMPILING, summarize
from probe.bench.experiments.e4_bucketing import padding_waste
from probe.bench.experiments.e6_combined import e6_waterfall
from probe.bench.experiments.e7_batching import e7_curves, saturation_rps
from probe.bench.experiments.e8_kv_layout import e8_curves, kv_held_vs_used
from probe.bench.experiments.roofline import roofline_bars
from probe.bench.report import write_report
from probe.report_charts.bench_charts import compile_split, rate_curves
from probe.report_charts.bench_figures import (
    SectionCharts,
    Snapshots,
    report_caption,
)
from probe.report_charts.session_charts import warm_latencies
from probe.session_store.snapshot import read_document, session_data
from tests.bench.figure_report import e7_results, synthetic_bench

pytest.importorskip("matplotlib")

RECORDED = Path(__file__).resolve().parents[1] / "fixtures" / "bench-quick"
RECORDED_CHARTS = {"timeline_E1", "cdf_E1", "timeline_E3", "cdf_E3", "cdf_E4", "padding_waste",
                   "rate_E8", "kv_held_vs_used", "compile_split"}
SYNTHETIC_CHARTS = {"timeline_E1", "cdf_E1", "timeline_E3", "cdf_E3", "cdf_E4", "padding_waste",
                    "cdf_E5", "cdf_E6", "e6_waterfall", "roofline", "rate_E7", "rate_E8",
                    "kv_held_vs_used"}


@pytest.fixture
def recorded(tmp_path) -> tuple[Path, dict]:
    out = tmp_path / "bench"
    shutil.copytree(RECORDED, out)
    return out, json.loads((out / "report.json").read_text(encoding="utf-8"))


@pytest.fixture
def synthetic(tmp_path, make_result) -> tuple[Path, dict]:
    from tests.bench.test_bench_report import plan
    out = tmp_path / "synthetic"
    return out, synthetic_bench(out, plan.__wrapped__(), make_result)


def svg_root(path: Path) -> ET.Element:
    root = ET.parse(path).getroot()
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    return root


def check_folder(out: Path, report: dict, expected: set[str]) -> None:
    written = report["files"]["figures"]
    assert written["skipped"] == [] and not written.get("unavailable")
    assert {f["name"] for f in written["figures"]} == expected
    markdown = (out / "report.md").read_text(encoding="utf-8")
    page = (out / "report.html").read_text(encoding="utf-8")
    for figure in written["figures"]:
        svg_root(out / figure["svg"])
        assert (out / figure["png"]).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert f"]({figure['svg']})" in markdown
        assert f'data-src="{figure["svg"]}"' in page
    assert page.count("<svg") == len(written["figures"])
    assert "http://" not in page and "https://" not in page
    assert "<script" not in page and "<link" not in page
    # the same sections as report.md, in the same order
    headings = [line[3:] for line in markdown.splitlines() if line.startswith("## ")]
    positions = [page.index(f">{h}</h2>".replace("&", "&amp;")) for h in headings]
    assert positions == sorted(positions)
    assert json.loads((out / "report.json").read_text())["files"]["figures"] == written


def test_a_recorded_bench_writes_every_chart_linked_and_inline(recorded, caplog) -> None:
    out, report = recorded
    write_report(out, report)
    check_folder(out, report, RECORDED_CHARTS)
    assert not [r for r in caplog.records if "chart of" in r.getMessage()]   # laid out well


def test_a_report_with_every_section_writes_every_chart(synthetic, caplog) -> None:
    out, report = synthetic
    write_report(out, report)
    check_folder(out, report, SYNTHETIC_CHARTS)
    assert not [r for r in caplog.records if "chart of" in r.getMessage()]


def test_cdfs_plot_the_warm_records_whose_p95_the_report_gives(recorded) -> None:
    out, report = recorded
    snapshots = Snapshots(out)
    for sid in ("E1", "E3", "E4"):
        section = report["experiments"][sid]
        chart = SectionCharts(section, report, snapshots, report_caption(report)).cdf()
        assert chart.series
        for role, config in section["configs"].items():
            if not isinstance(config, dict) or not config.get("snapshot"):
                continue
            label = next(k for k in chart.series if k.split(":")[0] == role)
            data = session_data(read_document(out / config["snapshot"]))
            passes = warm_latencies(data.records)
            plotted = chart.series[label]
            assert plotted["latency_ms"] == sorted(v for p in passes.values() for v in p)
            assert plotted["fraction"][-1] == 1.0
            # the report's warm p95 is the median of the passes' p95 of these very records
            p95 = float(np.median([summarize(p).p95 for p in passes.values()]))
            assert plotted["p95_ms"] == config["latency_p95_ms"]["median"] == pytest.approx(p95)


def test_the_timeline_plots_every_served_record_and_compile(recorded) -> None:
    out, report = recorded
    section = report["experiments"]["E3"]
    chart = SectionCharts(section, report, Snapshots(out), report_caption(report)).timeline()
    data = session_data(read_document(out / section["configs"]["off"]["snapshot"]))
    served = sorted((r for r in data.records if r.ok), key=lambda r: r.seq)
    plotted = chart.series["configs"]
    assert [v for s in plotted.values() for v in s["latency_ms"]] == [r.latency_ms for r in served]
    compiles = [e for e in data.events if e.kind in COMPILING]
    assert len(chart.series["compile_spans"]) == len(compiles) > 0
    assert section["configs"]["off"]["recompiles"] > 0          # what the spans show
    svg = (out / "t.svg")
    from probe.report_charts.canvas import save
    save(chart, svg)
    ids = {e.get("id") for e in svg_root(svg).iter()}
    assert {f"series-{cid}" for cid in plotted} <= ids


def test_bar_charts_plot_the_report_numbers(recorded) -> None:
    out, report = recorded
    caption = report_caption(report)
    e4, e8 = report["experiments"]["E4"], report["experiments"]["E8"]
    padding = padding_waste(e4, caption).series
    assert padding["replayed_pct"] == [e4["configs"][s]["padding_waste_pct"]
                                       for s in padding["sets"]]
    assert padding["whole_trace_pct"][padding["sets"].index("planner")] == \
        e4["configs"]["whole_trace"]["planner_waste_pct"]
    kv = kv_held_vs_used(e8, caption).series
    for layout in ("static", "paged"):
        assert kv[layout]["kv_waste_pct"] == e8["configs"][layout]["kv_waste_pct"]
        assert kv[layout]["used_pct"] == pytest.approx(100 - e8["configs"][layout]["kv_waste_pct"])
    rate = rate_curves(e8_curves(e8, report["runs"]["E8"]["trace"]), caption, name="r",
                       title="t").series
    for layout in ("static", "paged"):
        run = e8["configs"][layout]
        assert rate[f"chat/{layout}"]["offered_rps"] == [run["offered_rps"]]
        assert rate[f"chat/{layout}"]["p95_ms"] == [run["latency_ms"]["p95"]]
        assert rate[f"chat/{layout}"]["knee_rps"] == (run["offered_rps"] if run["keeps_up"]
                                                      else None)
    split = compile_split(report["runs"], caption).series
    phases = {r["label"]: r["compile_phases"] for r in report["runs"].values()
              if isinstance(r, dict) and r.get("compile_phases")}
    assert set(split) == set(phases) and split
    for label, parts in split.items():
        assert parts["tracing"] == phases[label]["tracing_s"]
        assert parts["inductor"] == phases[label]["inductor_s"]
        assert sum(parts.values()) == pytest.approx(sum(phases[label].values()))


def test_e6_e7_and_roofline_charts_plot_their_sections(synthetic) -> None:
    out, report = synthetic
    caption = report_caption(report)
    e6 = report["experiments"]["E6"]
    waterfall = e6_waterfall(e6, caption).series
    assert waterfall["steps"] == [k for k in e6["configs"] if k != "last_vs_baseline_p95"]
    for i, step in enumerate(waterfall["steps"]):
        assert waterfall["p95_ms"][i] == e6["configs"][step]["latency_p95_ms"]["median"]
        assert waterfall["p95_ms_high"][i] == e6["configs"][step]["latency_p95_ms"]["high"]
        assert waterfall["tokens_per_s"][i] == e6["configs"][step]["tokens_per_s"]["median"]
        assert waterfall["verdict"][i] == e6["configs"][step]["verdict"]["verdict"]
    results = e7_results()
    rates = rate_curves(e7_curves(report["runs"]["E7"]), caption, name="r", title="t").series
    for mode in ("off", "dynamic", "continuous"):
        mine = sorted((r for r in results.runs.values() if r.mode == mode),
                      key=lambda r: r.figures.offered_rps)
        assert rates[f"chat/{mode}"]["p95_ms"] == [r.figures.latency_ms.p95 for r in mine]
        assert rates[f"chat/{mode}"]["knee_rps"] == saturation_rps(results, "chat", mode)
    knees = [rates[f"chat/{m}"]["knee_rps"] for m in ("off", "dynamic", "continuous")]
    assert knees == sorted(knees) and len(set(knees)) == 3      # the fixture's capacities
    roof = report["experiments"]["roofline"]["configs"]
    bars = roofline_bars(report["experiments"]["roofline"], caption).series
    for precision, best in roof["precisions"].items():
        assert bars[precision]["memory roofline"] == roof["roofline_ms_per_token"][precision]
        assert bars[precision]["best lever"] == best["compiled_ms"]
        assert bars[precision]["matmuls alone"] == best["matmul_chain_ms"]
        assert bars[precision]["compiled"] == roof[precision]["ms_per_token"]["median"]


def test_slo_attainment_is_drawn_where_the_runs_measured_it() -> None:
    """For tune's runs later: a run with `slo_attainment` gets a second row of panels."""
    runs = {"runs": {f"chat/{f}x/off": {"trace": "chat", "mode": "off", "offered_rps": f,
                                         "keeps_up": f < 2, "latency_ms": {"p95": 100.0 * f},
                                         "slo_attainment": 1.0 / f} for f in (1, 2, 4)}}
    from probe.report_charts.canvas import Caption
    chart = rate_curves(e7_curves(runs), Caption("m", "t5-tiny", "chat", "now"),
                        name="slo", title="t")
    assert chart.series["chat/off"]["attainment"] == [1.0, 0.5, 0.25]
    assert chart.series["chat/off"]["knee_rps"] == 1
    assert len(chart.figure.axes) == 2


def test_without_matplotlib_the_report_says_which_extra(recorded, monkeypatch, capsys) -> None:
    out, report = recorded
    monkeypatch.setitem(sys.modules, "matplotlib", None)        # import matplotlib fails
    write_report(out, report)
    reason = report["files"]["figures"]["unavailable"]
    assert "matplotlib" in reason and "infertop[plots]" in reason
    assert capsys.readouterr().err.count("\n") == 1              # one line
    assert reason in (out / "report.md").read_text()
    assert (out / "report.html").is_file() and not (out / "figures").exists()


def test_report_charts_and_the_contract_import_no_matplotlib() -> None:
    from tests.import_check import roots_loaded
    loaded = roots_loaded("probe.bench.report", packages=("probe.report_charts", "probe.contract"))
    assert "matplotlib" not in loaded and "textual" not in loaded


def test_drawing_never_loads_pyplot(tmp_path) -> None:
    from tests.import_check import roots_loaded
    session = Path(__file__).resolve().parents[2] / "screenshots" / "sessions" / "3-bucketing.json"
    roots_loaded(then=(
        "from probe.report_charts.snapshot_plots import plot_show\n"
        f"plot_show({str(session)!r}, {str(tmp_path / 'x.svg')!r})\n"
        "assert 'matplotlib.pyplot' not in sys.modules, 'pyplot was imported'"))
    svg_root(tmp_path / "x.svg")
