"""The /metrics endpoint, scraped over 127.0.0.1 while a session grows."""

from __future__ import annotations

import urllib.request
from dataclasses import replace

import pytest
from prometheus_client.parser import text_string_to_metric_families

from probe.analysis.stats import session_segments
from probe.contract.figures import ConfigEnergy
from probe.contract.options import OptConfig, parse_opts
from probe.contract.records import EnergyPhases
from probe.contract.session import Session
from probe.monitoring.prometheus import PrometheusExporter
from tests.conftest import serve, synthetic_record


def scrape(port: int) -> dict[tuple[str, tuple], float]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
        text = response.read().decode()
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


@pytest.fixture
def exporter(make_engine):
    engine = make_engine("decode=fullgraph", "compile=default")
    exporter = PrometheusExporter(engine.session, lambda: 3, port=0)
    yield engine, exporter
    exporter.close()


def test_metrics_are_served_and_grow_with_the_session(exporter):
    engine, exporter = exporter
    records = serve(engine, [(7, 3), (9, 4)])
    exporter.refresh()
    first = scrape(exporter.port)
    ok = ("config", "c1"), ("status", "ok")
    assert first[("infertop_requests_total", ok)] == 2
    assert first[("infertop_request_latency_seconds_count", (("config", "c1"),))] == 2
    assert first[("infertop_request_latency_seconds_sum", (("config", "c1"),))] == pytest.approx(
        sum(r.latency_ms for r in records) / 1e3)
    assert first[("infertop_tpot_seconds_count", (("config", "c1"),))] == 2
    compiles = [e for e in engine.session.freeze().events if e.kind == "compile"]
    assert first[("infertop_compiles_total", (("kind", "compile"),))] == len(compiles) > 0
    assert first[("infertop_queue_depth", ())] == 3
    assert first[("infertop_kv_cache_bytes", ())] == records[-1].kv_cache_bytes
    label = engine.options.label()
    assert first[("infertop_config_info", (("config", "c1"), ("options", label)))] == 1

    serve(engine, [(7, 2)], start_seq=2)
    exporter.refresh()
    second = scrape(exporter.port)
    assert second[("infertop_requests_total", ok)] == 3


def test_the_grafana_dashboard_queries_only_metrics_the_exporter_serves(exporter):
    import json
    import re
    from importlib import resources
    _, exporter = exporter
    dashboard = json.loads((resources.files("probe.monitoring") / "grafana-dashboard.json")
                           .read_text())
    suffixes = {"histogram": ("_bucket", "_count", "_sum"), "counter": ("_total",),
                "gauge": ("",)}
    served = {family.name + suffix for family in exporter.registry.collect()
              for suffix in suffixes[family.type]}
    queried = {name for panel in dashboard["panels"] for target in panel["targets"]
               for name in re.findall(r"infertop_[a-z_]+", target["expr"])}
    assert queried and queried <= served, queried - served
    # energy: power from both counters, and J/token over the token counter
    units = {panel["fieldConfig"]["defaults"]["unit"]: " ".join(t["expr"] for t in panel["targets"])
             for panel in dashboard["panels"] if "fieldConfig" in panel}
    assert "rate(infertop_energy_joules_total" in units["watt"]
    assert "rate(infertop_idle_energy_joules_total" in units["watt"]
    assert re.search(r"infertop_energy_joules_total.*\) / .*infertop_output_tokens_total",
                     units["joule"])
    assert len({panel["id"] for panel in dashboard["panels"]}) == len(dashboard["panels"])


def test_compile_seconds_by_phase_are_the_sessions_split(exporter):
    """infertop_compile_seconds_total{config, phase} adds each compile's split once: the same
    sums as the session's segment (stats.compile_phases), scraped twice without double counting."""
    engine, exporter = exporter
    serve(engine, [(7, 3), (9, 4)])
    exporter.refresh()
    exporter.refresh()
    scraped = scrape(exporter.port)
    (segment,) = session_segments(engine.session.freeze())
    for phase, seconds in segment.compile_phases.parts().items():
        key = ("infertop_compile_seconds_total", (("config", "c1"), ("phase", phase)))
        assert scraped[key] == pytest.approx(seconds)
    assert segment.compile_phases.tracing_s > 0


def test_energy_counters_are_the_sessions_joules_and_idle_floor() -> None:
    """infertop_energy_joules_total{config} adds each record's joules once (failed ones' too),
    infertop_idle_energy_joules_total{config} follows the ledger's running idle floor; their
    sum is the segment's `joules` (energy_stats). A config without a counter exports neither."""
    session = Session()
    assert session.config_id(OptConfig()) == "c1"
    assert session.config_id(parse_opts(("compile=default",))) == "c2"
    measured = [replace(synthetic_record(f"r{i}", i, latency_ms=50.0,
                                         error="boom" if i == 2 else None),
                        energy_j=0.25 * (i + 1), energy_phases_j=EnergyPhases(0.1, 0.15 * i + 0.15))
                for i in range(3)]
    unmeasured = synthetic_record("u0", 3, latency_ms=50.0, config_id="c2")
    for record in (*measured[:2], unmeasured):
        session.add_record(record)
    session.set_energy("c1", ConfigEnergy(source="RAPL package-0", idle_j=1.5, idle_s=1.0))
    session.set_energy("c2", ConfigEnergy(unavailable="no powercap here"))
    exporter = PrometheusExporter(session, lambda: 0, port=0)
    try:
        exporter.refresh()
        exporter.refresh()
        first = scrape(exporter.port)
        assert first[("infertop_energy_joules_total", (("config", "c1"),))] == pytest.approx(
            0.25 + 0.5)
        assert first[("infertop_idle_energy_joules_total", (("config", "c1"),))] == 1.5

        session.add_record(measured[2])
        session.set_energy("c1", ConfigEnergy(source="RAPL package-0", idle_j=2.25, idle_s=2.0))
        exporter.refresh()
        second = scrape(exporter.port)
    finally:
        exporter.close()
    requests_j = second[("infertop_energy_joules_total", (("config", "c1"),))]
    idle_j = second[("infertop_idle_energy_joules_total", (("config", "c1"),))]
    assert requests_j == pytest.approx(sum(r.energy_j or 0.0 for r in measured))
    assert idle_j == 2.25
    segment = next(s for s in session_segments(session.freeze()) if s.config_id == "c1")
    assert segment.energy is not None
    assert requests_j + idle_j == pytest.approx(segment.energy.joules)
    # the dashboard's J/token: the joules counter over the token counter, from the start
    tokens = second[("infertop_output_tokens_total", (("config", "c1"),))]
    assert tokens == sum(r.output_tokens for r in measured if r.ok)
    assert requests_j / tokens == pytest.approx(segment.energy.j_per_token)
    assert not [key for key in second if "energy" in key[0] and ("config", "c2") in key[1]]
