"""Energy in the session JSON: records' energy_j / energy_phases_j and each config's ledger
round-trip, are range-checked as every reader checks them, and a snapshot saved before them
still loads (its segments say no readings were taken)."""

from __future__ import annotations

import json
from dataclasses import replace
from types import MappingProxyType

import pytest

from probe.analysis.stats import session_segments
from probe.common.errors import BadInput
from probe.contract.figures import ConfigEnergy
from probe.contract.options import OptConfig
from probe.contract.records import EnergyPhases
from probe.contract.session import ConfigEntry, SessionData
from probe.session_store.snapshot import saved_session, snapshot_document
from probe.session_store.snapshot_report import compare, show
from tests.conftest import synthetic_record


def document(energy: bool = True) -> dict:
    records = tuple(synthetic_record(f"r{i}", i, latency_ms=100.0 + i) for i in range(3))
    if energy:
        records = tuple(replace(r, energy_j=1.5 + i, energy_phases_j=EnergyPhases(0.5, 1.0 + i))
                        for i, r in enumerate(records))
    data = SessionData(records=records,
                       configs=MappingProxyType({"c1": ConfigEntry("c1", OptConfig())}),
                       energy=MappingProxyType({"c1": ConfigEnergy(
                           source="RAPL package-0", idle_j=2.0, idle_s=1.0, busy_s=3.0)}
                           if energy else {}))
    # through JSON text, as a file holds it
    return json.loads(json.dumps(snapshot_document(data, environment={}, model={}, trace={})))


def test_energy_round_trips_and_the_segment_is_recomputed_from_it() -> None:
    doc = document()
    data = saved_session(doc)
    assert data.records[1].energy_phases_j == EnergyPhases(0.5, 2.0)
    assert data.energy["c1"].idle_j == 2.0
    saved = doc["segments"][0]["energy"]
    tokens = sum(r.output_tokens for r in data.records)
    assert saved["joules"] == pytest.approx(1.5 + 2.5 + 3.5 + 2.0)
    assert saved["j_per_token"] == pytest.approx(7.5 / tokens)
    assert saved["source"] == "RAPL package-0"


def test_an_old_snapshot_without_energy_loads() -> None:
    doc = document(energy=False)
    for raw in doc["requests"]:
        del raw["energy_j"], raw["energy_phases_j"]
    del doc["energy"]
    data = saved_session(doc)
    assert all(r.energy_j is None for r in data.records)


@pytest.mark.parametrize("field, value, said", [
    ("energy_j", -1.0, "energy_j: expected joules"),
    ("energy_phases_j", {"encode": 1e300, "decode": 0.0}, "energy_phases_j.encode"),
    ("energy_phases_j", {"encode": 1.0}, "field 'decode' is missing"),
    ("energy_phases_j", [1.0, 2.0], "energy_phases_j: expected an object (EnergyPhases)"),
])
def test_bad_energy_is_refused_naming_the_field(field, value, said) -> None:
    doc = document()
    doc["requests"][0][field] = value
    with pytest.raises(BadInput, match="requests\\[0\\]") as error:
        saved_session(doc)
    assert said in str(error.value)


def test_snapshot_show_prints_the_column_and_the_line(tmp_path) -> None:
    path = tmp_path / "s.json"
    path.write_text(json.dumps(document()))
    text = show(str(path))
    assert "J/token" in text
    assert "energy: 9.5 J (idle 2 J, 2 W)" in text


def test_snapshot_show_says_why_without_a_counter(tmp_path) -> None:
    doc = document(energy=False)
    doc["energy"] = {"c1": {"unavailable": "no powercap here"}}
    path = tmp_path / "s.json"
    path.write_text(json.dumps(doc))
    text = show(str(path))
    assert "J/token" not in text
    assert "energy: not measurable here (no powercap here)" in text


def test_snapshot_compare_gives_j_per_token_with_its_b_over_a(tmp_path) -> None:
    """B spent twice A's joules on the same tokens: J/token ×2, and A is better."""
    a, b = document(), document()
    for raw in b["requests"]:
        raw["energy_j"] *= 2
        raw["energy_phases_j"] = {k: 2 * v for k, v in raw["energy_phases_j"].items()}
    (tmp_path / "a.json").write_text(json.dumps(a))
    (tmp_path / "b.json").write_text(json.dumps(b))
    text = compare(str(tmp_path / "a.json"), str(tmp_path / "b.json"))
    ja = saved_session(a)
    (segment,) = session_segments(ja)
    assert segment.energy is not None and segment.energy.j_per_token is not None
    row = next(line for line in text.splitlines() if line.startswith("J/token "))
    assert row.split() == ["J/token", f"{segment.energy.j_per_token:.3g}", "J",
                           f"{2 * segment.energy.j_per_token:.3g}", "J",
                           f"+{segment.energy.j_per_token:.3g}", "J", "2.00×", "A"]
    assert any(line.startswith("avg power ") for line in text.splitlines())
    assert "not measurable" not in text


def test_snapshot_compare_says_why_a_side_has_no_energy(tmp_path) -> None:
    a, b = document(), document(energy=False)
    b["energy"] = {"c1": {"unavailable": "no powercap here"}}
    (tmp_path / "a.json").write_text(json.dumps(a))
    (tmp_path / "b.json").write_text(json.dumps(b))
    text = compare(str(tmp_path / "a.json"), str(tmp_path / "b.json"))
    assert "B energy: not measurable here (no powercap here)" in text
    row = next(line for line in text.splitlines() if line.startswith("J/token "))
    assert row.split()[-1] == "—"           # B has none: no ratio, no verdict
    (tmp_path / "a.json").write_text(json.dumps(b))
    text = compare(str(tmp_path / "a.json"), str(tmp_path / "b.json"))
    assert "A and B energy: not measurable here (no powercap here)" in text
    assert not any(line.startswith("J/token ") for line in text.splitlines())
