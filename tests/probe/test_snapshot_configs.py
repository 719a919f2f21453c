"""`snapshot show` names what the requests were served in; `snapshot compare FILE:c1 FILE:c2`
compares two configs of one session."""

from __future__ import annotations

import json
from dataclasses import replace
from types import MappingProxyType

import pytest

from infertop.cli import main
from probe.contract.options import OptConfig
from probe.contract.session import ConfigEntry, SessionData
from probe.session_store.snapshot import snapshot_document
from probe.session_store.snapshot_report import compare, show
from tests.probe.test_steady_state import serial


@pytest.fixture
def session(tmp_path):
    """c1 fp32 served 30 requests, c2 bf16 10; the model was saved in bf16 (the last config)."""
    records = serial([float(i) for i in range(40)], [0.5] * 40, {})
    records = [r if r.seq < 30 else replace(r, config_id="c2") for r in records]
    configs = MappingProxyType({"c1": ConfigEntry("c1", OptConfig()),
                                "c2": ConfigEntry("c2", OptConfig(precision="bf16"))})
    data = SessionData(records=tuple(records), configs=configs)
    path = tmp_path / "s.json"
    path.write_text(json.dumps(snapshot_document(
        data, environment={"device": "cpu"},
        model={"name": "t5-tiny", "parameters": 10, "dtype": "bf16"}, trace={"name": "x"})))
    return path


def test_show_names_what_most_requests_were_served_in(session):
    header = show(str(session)).splitlines()[1]
    assert "served fp32 30 req · bf16 10 req" in header
    assert "(bf16," not in header


def test_served_counts_served_requests_only(tmp_path):
    """Issue 38: "served fp32 48 req" where 26 were served (22 lost at a restart, failed)."""
    records = serial([float(i) for i in range(48)], [0.5] * 48, {})
    records = [r if r.seq < 26 else replace(r, error="lost: the engine stopped") for r in records]
    data = SessionData(records=tuple(records),
                       configs=MappingProxyType({"c1": ConfigEntry("c1", OptConfig())}))
    path = tmp_path / "lost.json"
    path.write_text(json.dumps(snapshot_document(
        data, environment={"device": "cpu"},
        model={"name": "t5-tiny", "parameters": 10, "dtype": "fp32"}, trace={"name": "x"})))
    header = show(str(path)).splitlines()[1]
    assert "served fp32 26 req · 22 failed" in header


def test_two_configs_of_one_session_compare(session):
    text = compare(f"{session}:c1", f"{session}:c2")
    assert "compared: the configs chosen: c1 vs c2" in text
    assert "precision: fp32 → bf16" in text


def test_an_unknown_config_is_one_line_and_exit_2(session, capsys):
    assert main(["snapshot", "compare", f"{session}:c1", f"{session}:c9"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "no config c9 in that session (its configs: c1, c2)" in err
