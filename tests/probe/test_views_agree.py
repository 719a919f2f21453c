"""One value per figure: where two views show the same thing, both are computed here from one
saved session and compared (issue 49's "views that disagree"). Each test saves a synthetic
session the way `s` and `replay --out` write it, then reads it back through each view's own
code path: the dashboard's `--load` (tui/launch.saved_view), `infertop doctor` (text and
`--verify`'s choice), `snapshot show`."""

from __future__ import annotations

import json
from pathlib import Path
from types import MappingProxyType

from hypothesis import given
from hypothesis import strategies as st

from infertop.cli import main
from probe.contract.options import parse_opts
from probe.contract.session import ConfigEntry, SessionData, ab_arm_note
from probe.session_store.snapshot import snapshot_document
from tests.probe.doctor_records import record


def save(path: Path, records, live: dict | None = None, notes: dict | None = None,
         events=(), settings: dict | None = None, **configs) -> Path:
    notes = notes or {}
    data = SessionData(records=tuple(records), events=tuple(events), configs=MappingProxyType(
        {cid: ConfigEntry(cid, parse_opts(opts), tuple(notes.get(cid, ())))
         for cid, opts in configs.items()}))
    document = snapshot_document(data, environment={"device": "cpu"},
                                 model={"name": "t5-tiny", "source": "t5-tiny"}, trace={},
                                 settings=settings, live=live)
    path.write_text(json.dumps(document))
    return path


def ab_session(path: Path, live: dict | None) -> Path:
    """c1 served, then a live A/B of c1 against c2 (two options changed: the doctor's step)
    on alternate arrivals, kept A: c2's last request is the latest arrival."""
    before = [record(i, arrival_s=2.0 * i) for i in range(20)]
    split = [record(20 + i, arrival_s=40 + 2.0 * i, config_id="c2" if i % 2 else "c1")
             for i in range(10)]
    return save(path, before + split, live, notes={"c2": (ab_arm_note("c1"),)}, c1=(),
                c2=("decode=fullgraph", "batching=continuous"))


def verify_names(path: Path, capsys) -> str:
    """The config `doctor --verify` chose, from its one-line refusal (none has a next step)."""
    assert main(["doctor", str(path), "--verify"]) == 2
    line = capsys.readouterr().err.strip()
    assert "the doctor has no next step for" in line, line
    return line.split("no next step for ")[1].split()[0]


def test_the_current_config_is_one_value_for_the_dashboard_and_doctor_verify(tmp_path, capsys):
    from tui.launch import saved_view

    # saved by the engine: it served c1 (the A/B kept A), though c2's request arrived last
    path = ab_session(tmp_path / "kept.json", live={"config_id": "c1"})
    assert saved_view(path).config_id == verify_names(path, capsys) == "c1"
    # a file that does not say: both read the latest arrival
    path = ab_session(tmp_path / "old.json", live=None)
    assert saved_view(path).config_id == verify_names(path, capsys) == "c2"


def test_the_checklist_judges_an_ab_as_an_ab_in_every_view(tmp_path, capsys):
    from tui.launch import saved_view

    path = ab_session(tmp_path / "ab.json", live={"config_id": "c1"})
    shown = {item.item: item for item in saved_view(path).checklist}["one change at a time"]
    assert main(["doctor", str(path)]) == 0
    doctor = capsys.readouterr().out
    assert shown.status == "pass" and "c1 ↔ c2: an A/B" in shown.evidence, shown
    assert shown.evidence in doctor
    assert "changed decode and batching" not in doctor
    # the same two configs without the A/B's note: a change of two options, failed in both
    path = save(tmp_path / "two.json", [record(i, arrival_s=2.0 * i, config_id=f"c{1 + i // 10}")
                                        for i in range(20)],
                c1=(), c2=("decode=fullgraph", "batching=continuous"))
    shown = {item.item: item for item in saved_view(path).checklist}["one change at a time"]
    main(["doctor", str(path)])
    assert shown.status == "fail" and "c1 → c2 changed decode and batching" in shown.evidence
    assert shown.evidence in capsys.readouterr().out


def test_the_roofline_multiple_is_one_value_in_the_dashboard_and_the_doctor(tmp_path, capsys):
    """One config, healthy decode, a saved roofline: every "N×" the doctor prints about the
    roofline is the latency panel's, and a tiny roofline reads in µs, not "0.0 ms"."""
    import re
    from dataclasses import asdict, replace

    from probe.common.units import fmt_ratio
    from probe.contract.records import RooflineStatus
    from tui.launch import saved_view
    from tui.widgets.latency import roofline_line

    roofline = RooflineStatus("fp32", 10_000, 100.0, 0.0, roofline_ms=0.004)
    records = [replace(record(i, arrival_s=2.0 * i), tpot_ms=6.5 + 0.01 * i) for i in range(20)]
    path = save(tmp_path / "roof.json", records, live={"roofline": asdict(roofline)}, c1=())
    view = saved_view(path)
    shown = roofline_line(view, 200, now_unix=0.0).plain
    assert view.tpot is not None and view.tpot.ratio is not None
    multiple = fmt_ratio(view.tpot.ratio)
    assert f"{multiple} roofline" in shown
    assert main(["doctor", str(path)]) == 0
    doctor = capsys.readouterr().out
    said = set(re.findall(r"([\d,.]+×) (?:the )?roofline", doctor))
    assert said == {multiple}, doctor
    ratio_free = roofline_line(replace(view, tpot=replace(view.tpot, warm=False)), 200, 0.0).plain
    assert "0.0 ms" not in ratio_free and "roofline 4 µs" in ratio_free


def test_the_doctors_predicted_saving_is_one_value_in_every_view(tmp_path, capsys):
    """A ladder of recompiles, one a new input length: the guard group's fix (the `r` screen,
    the doctor's groups) and the next step (the doctor screen, `infertop doctor`) say one
    saving for bucketing=on."""
    import re

    from tests.probe.doctor_records import event
    from tui.launch import saved_view

    lengths = [10 + 3 * i for i in range(12)]
    records = [record(i, arrival_s=3.0 * i, input_tokens=n, encode_s=2.0, decode_s=0.1)
               for i, n in enumerate(lengths)]
    events = [event(f"0/{i}", 3.0 * i + 0.01, 1.9, kind="compile" if i == 0 else "recompile",
                    function="encode", request_id=f"r{i}",
                    reason=None if i == 0 else (f"0/0: tensor 'input_ids' size mismatch at "
                                                f"index 1. expected {lengths[i - 1]}, actual {n}"))
              for i, n in enumerate(lengths)]
    path = save(tmp_path / "ladder.json", records, events=events, c1=("compile=default",),
                settings={"bucket_edges": [16, 32, 64, 128]})
    view = saved_view(path)
    step, groups = view.diagnosis.next_step, view.diagnosis.guard_groups
    assert step.options == {"bucketing": "on"} and groups[0].fix.change == {"bucketing": "on"}
    assert main(["doctor", str(path)]) == 0
    texts = [step.predicted, groups[0].fix.text, capsys.readouterr().out]
    said = [set(re.findall(r"about \d+ recompiles \([^)]+\) avoided", t)) for t in texts]
    assert said[0] == said[1] == said[2] and len(said[0]) == 1, said


@given(kv=st.lists(st.integers(0, 10**9), min_size=1, max_size=30), free=st.integers(0, 10**12))
def test_kv_headroom_is_one_figure_for_the_panel_and_the_doctor(kv, free):
    """The KV panel's headroom (live_figures.kv_status) and the doctor's and checklist's
    (findings.kv_headroom) over the same records and free memory: one number. The panel once
    rounded the per-request p95 down to whole bytes first and could read one request more."""
    from dataclasses import replace

    from probe.analysis.findings import kv_headroom
    from probe.analysis.live_figures import kv_status
    from probe.contract.device_sample import DeviceSample

    records = tuple(replace(record(i, arrival_s=float(i)), kv_cache_bytes=b)
                    for i, b in enumerate(kv))
    sample = DeviceSample("CPU", "cpu", None, None, None, free)
    doctor = kv_headroom(records, sample)
    panel = kv_status(records, records, free).headroom_requests
    assert panel == (None if doctor is None else doctor[1])
    if panel is not None:       # and it is what it says: that many p95 caches fit, one more not
        p95 = doctor[2]
        assert panel * p95 <= free < (panel + 1) * p95
