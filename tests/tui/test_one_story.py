"""Issue 38: one definition per figure on every screen. One session; the throughput panel, the
doctor, its checklist, the latency panel, `snapshot show` and the replay's lines each print the
same value for offered load and capacity, a config's TPOT and roofline ratio, and a request's
compile wait."""

from __future__ import annotations

import json
from dataclasses import replace

from probe.analysis.attribution import attribute
from probe.analysis.compile_wait import compile_wait_ms
from probe.analysis.doctor_text import segment_lines
from probe.analysis.load_figures import live_load
from probe.common.units import fmt_ms, fmt_ratio
from probe.engine.process.replay_progress import progress_line
from probe.session_store.snapshot import snapshot_document
from probe.session_store.snapshot_report import show
from tests.tui.synthetic import ROOFLINE, _rebuilt, session_at
from tui.widgets.latency import roofline_line
from tui.widgets.throughput import throughput_detail


def _session(stages):
    base = stages["compiled"]
    data = session_at(base.t_s, base.config_id)
    replay = replace(base.replay, offered_rps=0.28, capacity_rps=0.22, queue_depth=187,
                     overloaded=True)
    return data, _rebuilt(base, data, roofline=ROOFLINE, replay=replay)


def test_offered_load_and_capacity_read_the_same_on_the_panel_the_doctor_and_the_checklist(
        stages):
    _, view = _session(stages)
    said = live_load(0.28, 0.22).text()
    assert "offered 127% of capacity (last 30 s)" in said
    panel = throughput_detail(view, 200).plain
    load = live_load(0.28, 0.22)
    assert load.rates_text() in panel and load.share_text() in panel
    assert said == f"{load.rates_text()} · {load.share_text()}"
    doctor = "\n".join(segment_lines(view.diagnosis, "", view.checklist))
    assert said in doctor
    (peak,) = [c for c in view.checklist if c.item == "load tested at peak"]
    assert peak.status == "pass" and said in peak.evidence


def test_a_configs_tpot_and_roofline_ratio_read_the_same_everywhere(stages, tmp_path):
    data, view = _session(stages)
    tpot = view.tpot
    assert tpot is not None and tpot.tpot_ms is not None and tpot.ratio is not None
    value, ratio = fmt_ms(tpot.tpot_ms), fmt_ratio(tpot.ratio)
    panel = roofline_line(view, 200, ROOFLINE.measured_unix).plain
    assert f"TPOT {value} ({tpot.scope()}) · {ratio} roofline" in panel
    doctor = "\n".join(segment_lines(view.diagnosis, "", view.checklist))
    assert f"TPOT: {tpot.text()}" in doctor
    path = tmp_path / "s.json"
    path.write_text(json.dumps(snapshot_document(
        data, environment={"device": "cpu"}, model={"name": "t5-small"}, trace={"name": "x"})))
    table = show(str(path))
    header = next(line for line in table.splitlines() if "warm tpot" in line)
    row = next(line for line in table.splitlines() if line.strip().startswith(view.config_id))
    column = header.index("warm tpot")
    assert row[column:column + len("warm tpot")].strip() == value


def test_a_requests_compile_wait_reads_the_same_in_the_replay_and_the_doctor(stages):
    data, _ = _session(stages)
    waited = [r for r in data.records if r.ok and compile_wait_ms(r, data.events) > 0]
    queued = [r for r in waited if compile_wait_ms(r, data.events) > r.compile_stall_ms]
    assert waited and queued            # some waited in the queue behind another's compile
    for record in queued[:5]:
        wait = compile_wait_ms(record, data.events)
        line = progress_line(record, "1/1 served", data.events)
        assert f"compile_wait={wait:.1f} ms (own service {record.compile_stall_ms:.1f} ms)" in line
        assert attribute([record], data.events).cause("compile").ms == wait
