"""Every item of the readiness checklist, on sessions that do and do not satisfy it."""

from __future__ import annotations

from dataclasses import replace

from probe.analysis.checklist import FAIL, NOT_YET, PASS
from probe.analysis.diagnosis import DoctorContext
from probe.analysis.session_diagnosis import diagnose_session
from probe.contract.device_sample import DeviceSample
from probe.contract.records import GraphBreakRecord
from tests.probe.doctor_records import event, record, serial
from tests.probe.test_diagnosis import calm, session


def items(data, ctx: DoctorContext | None = None) -> dict[str, tuple[str, str]]:
    ctx = ctx if ctx is not None else DoctorContext()
    return {c.item.split(" (")[0]: (c.status, c.evidence)
            for c in diagnose_session(data, ctx).checklist}


def test_a_short_calm_eager_session_leaves_most_items_not_yet():
    got = items(session(calm(5)))
    assert got["traffic measured"][0] == NOT_YET
    assert got["bottleneck identified"][0] == PASS
    assert got["graph breaks inspected"] == (NOT_YET, "no compiled segment: breaks show under "
                                                      "compile (press c)")
    assert got["dynamic shapes reduced"][0] == NOT_YET
    assert got["KV cache benchmarked"] == (NOT_YET, "no segment with kv_cache=off; press k")
    assert got["one change at a time"][0] == NOT_YET
    assert got["p50/p95/cold start measured"][0] == NOT_YET
    assert got["memory watched against concurrency"][0] == NOT_YET
    assert got["load tested at peak"][0] == NOT_YET
    assert "replay faster" in got["load tested at peak"][1]
    assert got["results documented"] == (NOT_YET, "not saved yet; press s")


def _kv(records, byte_count):
    return [replace(r, kv_cache_bytes=byte_count) for r in records]


def test_a_full_session_passes_what_it_measured():
    c1 = _kv(calm(20), 1000)
    c2 = _kv(calm(20, config_id="c2", t0=100.0), 10)
    c3 = [replace(r, id=f"x{r.id}", config_id="c3", arrival_s=r.arrival_s + 200,
                  start_s=r.start_s + 200, end_s=r.end_s + 200,
                  last_token_s=r.last_token_s + 200) for r in serial([(0.01, 0.5)] * 30)]
    events = [event("0/0", 200.02, 0.3, config_id="c3")]
    data = session(c1 + c2 + c3, events, c1=(), c2=("kv_cache=off",),
                   c3=("kv_cache=off", "compile=default"))
    sample = DeviceSample("CPU", "2 cores", 50.0, 1, 10, 9_000_000)
    got = items(data, DoctorContext(device_sample=sample, saved="s.json"))
    for name in ("traffic measured", "bottleneck identified", "graph breaks inspected",
                 "dynamic shapes reduced", "KV cache benchmarked", "one change at a time",
                 "p50/p95/cold start measured", "memory watched against concurrency",
                 "load tested at peak", "results documented"):
        assert got[name][0] == PASS, (name, got[name])
    assert "kv_cache=on c1" in got["KV cache benchmarked"][1]
    assert "cold start (its first request)" in got["p50/p95/cold start measured"][1]


def test_breaks_recompiles_two_changes_and_little_memory_fail():
    c1 = calm(20)
    c2 = [record(100 + i, arrival_s=100 + 2.0 * i, config_id="c2", input_tokens=10 + i)
          for i in range(10)]
    events = [event(f"0/{i}", 100 + 2.0 * i + 0.001, 0.001, config_id="c2",
                    kind="compile" if i == 0 else "recompile") for i in range(10)]
    data = replace(session(_kv(c1 + c2, 10_000), events, c1=(),
                           c2=("compile=default", "kv_cache=off")),
                   breaks=(GraphBreakRecord("c2", "generic_jump", "generate.py:12", 7),))
    sample = DeviceSample("CPU", "2 cores", 50.0, 1, 10, 5_000)
    got = items(data, DoctorContext(device_sample=sample, bucket_edges=(16, 32)))
    assert got["graph breaks inspected"][0] == FAIL
    assert "press g" in got["graph breaks inspected"][1]
    assert got["dynamic shapes reduced"][0] == FAIL
    assert got["one change at a time"] == (FAIL, "c1 → c2 changed compile and kv_cache; compare "
                                                 "one option at a time")
    assert got["memory watched against concurrency"][0] == FAIL


def test_the_next_step_names_a_failed_items_fix_or_says_why_another_comes_first():
    """Issue 38: "next step: no option change addresses it" sat above "[fail] dynamic shapes
    reduced … bucketing=on (press b)"."""
    from probe.analysis.doctor_text import next_step_text, report_text
    c1 = calm(20)
    c2 = [record(100 + i, arrival_s=100 + 2.0 * i, config_id="c2", input_tokens=10 + i)
          for i in range(10)]
    events = [event(f"0/{i}", 100 + 2.0 * i + 0.001, 0.001, config_id="c2",
                    kind="compile" if i == 0 else "recompile") for i in range(10)]
    data = replace(session(_kv(c1 + c2, 10_000), events, c1=(),
                           c2=("compile=default", "kv_cache=off")),
                   breaks=(GraphBreakRecord("c2", "generic_jump", "generate.py:12", 7),))
    report = diagnose_session(data, DoctorContext(bucket_edges=(16, 32)))
    failed = [c for c in report.checklist if c.status == FAIL and c.fix]
    assert failed, report.checklist
    for d in report.segments:
        no_step = replace(d, next_step=None, healthy=False)
        text = next_step_text(no_step, report.checklist)
        assert failed[0].fix_text() in text and failed[0].item in text, text
        if d.next_step is not None:
            text = next_step_text(d, report.checklist)
            named = " ".join(f"{k}={v}" for k, v in d.next_step.options.items())
            assert text.startswith(named)
            others = [c for c in failed
                      if not any(d.next_step.options.get(k) == v for k, v in c.fix)]
            if others:
                assert "comes first" in text and others[0].fix_text() in text
    assert "no option change addresses it\n" not in report_text(report)
