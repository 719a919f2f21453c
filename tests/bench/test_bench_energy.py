"""bench's energy: each run's J/token in report.json (`runs.<key>.energy`, the section's
config entry, and the top-level `energy`) and in report.md's table, equal to a recomputation
from the records its saved session holds; where no counter was read, the reason once however
many runs share it. Synthetic sessions: no model."""

from __future__ import annotations

import json
from dataclasses import replace
from types import MappingProxyType

import pytest

from probe.bench.energy_section import energy_by_run, energy_markdown
from probe.bench.report import render_markdown
from probe.contract.figures import ConfigEnergy
from probe.contract.options import OptConfig
from probe.contract.records import EnergyPhases
from probe.runs.plan import BenchRequest, RunSpec
from probe.runs.results import PassResult, section_figures, summarize_run
from probe.session_store.snapshot import snapshot_document
from tests.bench.conftest import record

WHY = "no powercap here: /sys/class/powercap does not exist"


def a_run(make_session, energy: ConfigEnergy, joules: list[float] | None,
          failed: frozenset[int] = frozenset()):
    """A run as the bench makes one (a warm-up pass, then one pass), with its session."""
    count = 3
    spec = RunSpec(OptConfig(), tuple(BenchRequest(f"r{i}", 10, 5) for i in range(count)),
                   "replayed")
    warm = [record(f"r{i}@warm-up", i, latency_ms=50.0, output_tokens=4 + i)
            for i in range(count)]
    steady = [record(f"r{i}@pass 1", count + i, latency_ms=50.0, output_tokens=4 + i,
                     input_tokens=8, padded_tokens=10,
                     error="RuntimeError: boom" if i in failed else None)
              for i in range(count)]
    records = warm + steady
    if joules is not None:
        records = [replace(r, energy_j=j, energy_phases_j=EnergyPhases(j / 4, 3 * j / 4))
                   for r, j in zip(records, joules)]
    data = replace(make_session(records), energy=MappingProxyType({"c1": energy}))
    return summarize_run(spec, data, PassResult(tuple(warm), 1.0),
                         [PassResult(tuple(steady), 1.0)]), data


def test_each_runs_j_per_token_is_its_saved_records_own(make_session) -> None:
    joules = [0.5, 0.75, 1.0, 1.25, 1.5, 2.0]
    meter = ConfigEnergy(source="RAPL package-0", idle_j=3.0, idle_s=2.0, busy_s=1.0)
    result, data = a_run(make_session, meter, joules, failed=frozenset({1}))
    saved = json.loads(json.dumps(snapshot_document(data, environment={}, model={}, trace={})))
    # independent: every request's joules (the failed one's too) ÷ served requests' tokens
    expected = (sum(r["energy_j"] for r in saved["requests"])
                / sum(r["output_tokens"] for r in saved["requests"] if not r["error"]))
    run, config = result.as_dict(), section_figures(result)
    for figures in (run, config):
        assert figures["energy"]["j_per_token"] == pytest.approx(expected)
        assert figures["energy"]["source"] == "RAPL package-0"
    report = {"runs": {"e1": run}, "energy": energy_by_run({"e1": run})}
    assert report["energy"] == {"j_per_token": {"e1": run["energy"]["j_per_token"]},
                                "unavailable": {}}
    markdown = "\n".join(energy_markdown(report))
    row = next(line for line in markdown.splitlines() if line.startswith("| `e1`"))
    cells = [cell.strip() for cell in row.strip("|").split("|")]
    assert cells[2] == f"{expected:.3g} J"
    assert cells[-1] == "RAPL package-0"


def test_the_reason_is_said_once_for_every_run_without_a_counter(make_session) -> None:
    runs = {key: a_run(make_session, ConfigEnergy(unavailable=WHY), None)[0].as_dict()
            for key in ("e1-off", "e1-default", "e4-planner")}
    assert all(run["energy"] == {"unavailable": WHY} for run in runs.values())
    runs["e2-broken"] = {"key": "e2-broken", "error": "RuntimeError: boom"}   # a failed run
    report = {"runs": runs, "energy": energy_by_run(runs), "experiments": {}}
    assert report["energy"] == {"j_per_token": {},
                                "unavailable": {WHY: ["e1-off", "e1-default", "e4-planner"]}}
    markdown = render_markdown(report)
    assert markdown.count(WHY) == 1
    assert ("3 runs without J/token: not measurable here (" + WHY + ") — `e1-off`, "
            "`e1-default`, `e4-planner`") in markdown
    assert "| J/token |" not in markdown


def test_a_report_without_energy_figures_has_no_section() -> None:
    runs = {"e1": {"key": "e1", "label": "baseline"}}
    assert energy_by_run(runs) == {}
    assert energy_markdown({"runs": runs, "energy": {}}) == []
