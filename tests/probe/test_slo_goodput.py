"""--slo and the figures it makes: goodput and attainment, one definition each, recomputed here
from the records in every view that shows them (segments, live window, session JSON, snapshot
show/compare, export, Prometheus). No engine: synthetic records."""

from __future__ import annotations

import csv
import dataclasses
import json
import urllib.request

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from probe.analysis.live_figures import window_stats
from probe.analysis.slo import goodput
from probe.analysis.stats import session_segments
from probe.common.atomic import write_json_atomic
from probe.common.errors import BadInput
from probe.contract.objective import Slo, parse_slo, slo_from_dict
from probe.contract.options import OptConfig
from probe.contract.records import RequestRecord
from probe.contract.session import Session
from probe.session_store.snapshot import session_data, snapshot_document
from tests.conftest import synthetic_record

BOUND_MS = st.one_of(st.none(), st.floats(5, 500))


@st.composite
def records(draw) -> list[RequestRecord]:
    """Served and failed requests, some with no TTFT (no token) or no TPOT (one token)."""
    count = draw(st.integers(0, 25))
    made = []
    for seq in range(count):
        outputs = draw(st.integers(1, 12))
        record = synthetic_record(f"r{seq}", seq, latency_ms=draw(st.floats(2, 800)),
                                  output_tokens=outputs, start_s=draw(st.floats(0, 30)),
                                  error=draw(st.sampled_from([None, None, None, "boom"])))
        if draw(st.booleans()) and record.ok and not draw(st.integers(0, 4)):
            record = dataclasses.replace(record, ttft_ms=None, first_token_s=None)
        if not record.ok:
            record = dataclasses.replace(record, output_tokens=0)
        made.append(record)
    return made


def slos():
    return st.builds(Slo, ttft_ms=BOUND_MS, tpot_ms=BOUND_MS, latency_ms=BOUND_MS)


def recomputed(rows: list[RequestRecord], slo: Slo) -> tuple:
    """Goodput and attainment by hand, from the documented definitions."""
    def good(r):
        if r.error is not None:
            return False
        if slo.ttft_ms is not None and (r.ttft_ms is None or r.ttft_ms > slo.ttft_ms):
            return False
        if slo.tpot_ms is not None and r.tpot_ms is not None and r.tpot_ms > slo.tpot_ms:
            return False
        return slo.latency_ms is None or r.latency_ms <= slo.latency_ms
    kept = [r for r in rows if good(r)]
    if not rows:
        return None, None, None
    span = max(r.end_s for r in rows) - min(r.start_s for r in rows)
    rate = len(kept) / span if span > 0 else None
    tokens = sum(r.output_tokens for r in kept) / span if span > 0 else None
    return rate, tokens, len(kept) / len(rows)


def approx(values):
    return tuple(None if v is None else pytest.approx(v) for v in values)


@settings(max_examples=150, deadline=None)
@given(rows=records(), slo=slos())
def test_goodput_and_attainment_match_a_recomputation_from_records(rows, slo):
    figures = goodput(rows, slo)
    expected = recomputed(rows, slo)
    assert (figures.goodput_rps, figures.goodput_tokens_per_s,
            figures.slo_attainment) == approx(expected)
    window = window_stats(tuple(rows), slo=slo).goodput
    assert window == figures
    if figures.goodput_rps is not None:
        served = sum(r.ok for r in rows) / (max(r.end_s for r in rows)
                                            - min(r.start_s for r in rows))
        assert figures.goodput_rps <= served + 1e-9


def session_of(rows: list[RequestRecord], slo: Slo | None) -> Session:
    session = Session()
    session.config_id(OptConfig())
    session.config_id(OptConfig(decode="fullgraph"))
    for record in rows:
        session.add_record(record)
    session.set_slo(slo)
    return session


@settings(max_examples=40, deadline=None)
@given(rows=records(), slo=slos())
def test_every_segment_and_the_saved_session_carry_the_same_figures(rows, slo):
    rows = [dataclasses.replace(r, config_id="c2" if r.seq % 3 == 0 else "c1") for r in rows]
    data = session_of(rows, slo).freeze()
    document = snapshot_document(data, environment={}, model={}, trace={})
    assert document["slo"] == slo.as_dict()
    for segment in document["segments"]:
        mine = [r for r in rows if r.config_id == segment["config_id"]]
        assert (segment["goodput_rps"], segment["goodput_tokens_per_s"],
                segment["slo_attainment"]) == approx(recomputed(mine, slo))
    back = session_data(json.loads(json.dumps(document)))
    assert back.slo == slo
    saved = [{k: v for k, v in s.items() if k != "diagnosis"} for s in document["segments"]]
    assert [s.as_dict() for s in session_segments(back)] == saved      # the doctor's is added beside


def test_without_an_slo_the_figures_are_none_and_old_sessions_read():
    rows = [synthetic_record("a", 0, latency_ms=10.0)]
    data = session_of(rows, None).freeze()
    document = snapshot_document(data, environment={}, model={}, trace={})
    assert document["slo"] is None
    segment = document["segments"][0]
    assert segment["goodput_rps"] is None and segment["slo_attainment"] is None
    del document["slo"]                                  # saved before --slo existed
    assert session_data(document).slo is None


@pytest.mark.parametrize("text, expected", [
    ("ttft=1s,tpot=60ms,latency=8s", Slo(1000.0, 60.0, 8000.0)),
    ("TPOT = 0.5 s", Slo(tpot_ms=500.0)),
    ("latency=250ms", Slo(latency_ms=250.0)),
    ("ttft=1e3ms", Slo(ttft_ms=1000.0)),
])
def test_slo_text_is_parsed_and_written_back(text, expected):
    slo = parse_slo(text)
    assert slo == expected
    assert parse_slo(slo.text()) == slo


@pytest.mark.parametrize("text, named", [
    ("", "empty"), ("ttft", "NAME=VALUE"), ("p95=1s", "unknown bound 'p95'"),
    ("ttft=1", "unit '(none)'"), ("ttft=1min", "unit 'min'"), ("ttft=0ms", "positive"),
    ("ttft=-1s", "not a number"), ("ttft=1s,ttft=2s", "twice"), ("tpot=abc", "not a number"),
    ("latency=1s,", "NAME=VALUE"),
])
def test_bad_slo_text_is_one_line_naming_what_is_wrong(text, named):
    with pytest.raises(BadInput) as caught:
        parse_slo(text)
    assert named in str(caught.value) and "\n" not in str(caught.value)


@pytest.mark.parametrize("argv", [["replay", "--out", "x.json", "--slo", "ttft=1h"],
                                  ["replay", "--out", "x.json", "--slo", "speed=1s"],
                                  ["--slo", "tpot=0s"]])
def test_the_cli_refuses_a_bad_slo_in_one_line_with_exit_2(argv, capsys, tmp_path,
                                                           monkeypatch):
    from infertop.cli import main
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as caught:
        main(argv)
    assert caught.value.code == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("infertop: error: argument --slo:") and "\n" not in err
    assert not (tmp_path / "x.json").exists()


def test_a_saved_slo_of_the_wrong_shape_is_refused():
    with pytest.raises(BadInput, match="slo.ttft_ms"):
        slo_from_dict({"ttft_ms": "1s"})


@pytest.fixture
def saved(tmp_path):
    rows = [synthetic_record("fast", 0, latency_ms=50.0, output_tokens=4),
            synthetic_record("slow", 1, latency_ms=900.0, output_tokens=4),
            synthetic_record("lost", 2, latency_ms=20.0, error="boom")]
    data = session_of(rows, parse_slo("latency=500ms")).freeze()
    path = tmp_path / "s.json"
    write_json_atomic(path, snapshot_document(data, environment={}, model={"name": "m"},
                                              trace={"name": "t"}))
    return path, rows


def test_snapshot_show_and_compare_print_goodput_and_attainment(saved):
    from probe.session_store.snapshot_report import compare, show
    path, rows = saved
    text = show(str(path))
    assert "SLO latency=500ms" in text and "attained" in text
    assert "33%" in text                                 # 1 good of 3 (one failed)
    rows_text = compare(str(path), str(path))
    assert "SLO attainment" in rows_text and "goodput (req/s)" in rows_text


def test_export_has_the_segment_figures_and_each_requests_verdict(saved, tmp_path):
    from probe.session_store.snapshot_export import export
    path, rows = saved
    requests, segments = export(path, tmp_path / "out", "csv")
    with open(requests) as handle:
        verdicts = {row["id"]: row["meets_slo"] for row in csv.DictReader(handle)}
    assert verdicts == {"fast": "True", "slow": "False", "lost": "False"}
    with open(segments) as handle:
        segment = next(csv.DictReader(handle))
    assert float(segment["slo_attainment"]) == pytest.approx(1 / 3)


def test_prometheus_serves_each_configs_goodput_and_attainment():
    from prometheus_client.parser import text_string_to_metric_families

    from probe.monitoring.prometheus import PrometheusExporter
    rows = [synthetic_record("a", 0, latency_ms=50.0), synthetic_record("b", 1, latency_ms=900.0)]
    slo = parse_slo("latency=500ms")
    session = session_of(rows, slo)
    exporter = PrometheusExporter(session, lambda: 0, port=0)
    try:
        exporter.refresh()
        with urllib.request.urlopen(f"http://127.0.0.1:{exporter.port}/metrics",
                                    timeout=5) as response:
            text = response.read().decode()
    finally:
        exporter.close()
    samples = {(s.name, tuple(sorted(s.labels.items()))): s.value
               for family in text_string_to_metric_families(text) for s in family.samples}
    figures = goodput(rows, slo)
    c1 = (("config", "c1"),)
    assert samples[("infertop_slo_attainment", c1)] == pytest.approx(figures.slo_attainment)
    assert samples[("infertop_goodput_requests_per_second", c1)] == pytest.approx(
        figures.goodput_rps)
    assert samples[("infertop_goodput_tokens_per_second", c1)] == pytest.approx(
        figures.goodput_tokens_per_s)
