"""The doctor's findings, verdict and next step on synthetic sessions (no engine)."""

from __future__ import annotations

from dataclasses import replace
from types import MappingProxyType

import pytest

from probe.analysis.diagnosis import DoctorContext, diagnose
from probe.analysis.doctor_live import live_doctor, overload_finding
from probe.analysis.doctor_text import report_text
from probe.analysis.findings import cpu_contention, peak_concurrency, saturation
from probe.analysis.load_figures import records_load
from probe.analysis.session_diagnosis import diagnose_session
from probe.analysis.stats import session_segments
from probe.contract.device_sample import DeviceSample
from probe.contract.options import parse_opts
from probe.contract.records import RooflineStatus
from probe.contract.session import ConfigEntry, SessionData
from probe.session_store.doctor_compare import cause_moves
from tests.probe.doctor_records import event, record, serial


def session(records, events=(), **configs) -> SessionData:
    configs = configs or {"c1": ()}
    return SessionData(records=tuple(records), events=tuple(events),
                       configs=MappingProxyType({cid: ConfigEntry(cid, parse_opts(opts))
                                                 for cid, opts in configs.items()}))


def calm(n: int = 20, config_id: str = "c1", t0: float = 0.0, **kwargs):
    return [record(i, arrival_s=t0 + 2.0 * i, config_id=config_id, **kwargs) for i in range(n)]


def test_a_calm_session_is_healthy_with_no_advice():
    roofline = RooflineStatus("fp32", 1, 1.0, 0.0, roofline_ms=2.5)
    records = [replace(r, tpot_ms=10.0) for r in calm()]
    d = diagnose(session(records), "c1", DoctorContext(roofline=roofline))
    assert d.healthy and d.next_step is None and d.tpot.ratio == 4.0
    # the multiple is the config's TPOT figure, the one the latency panel prints
    assert d.verdict.startswith("healthy: p95 110 ms is 91% decode (TPOT 4.00× the roofline, "
                                "warm p50, 20 req)")
    assert d.verdict.endswith("no change advised")


def test_a_burst_is_saturated_queueing_and_batching_is_advised_with_its_capacity():
    records = serial([(0.01, 0.5)] * 30)
    d = diagnose(session(records), "c1", DoctorContext(max_batch=8))
    assert d.tail.causes[0].cause == "queue" and not d.healthy
    assert [f.finding for f in d.findings] == ["saturation"]
    assert d.next_step.options == {"batching": "continuous"}
    assert "capacity up to 16.0 req/s" in d.next_step.predicted      # 8 × 2.0 req/s
    assert "without it p95 would be 500 ms" in d.verdict


def test_advice_the_session_already_shows_worse_is_not_given():
    burst = serial([(0.01, 0.5)] * 30)
    # the same burst served continuous was slower still: batching is not advised again
    worse = [replace(r, id=f"w{r.id}", config_id="c2",
                     end_s=r.end_s * 2, latency_ms=r.latency_ms * 2 + 1) for r in burst]
    data = session(burst + worse, c1=(), c2=("batching=continuous",))
    d = diagnose(data, "c1", DoctorContext(max_batch=8))
    assert d.next_step is not None and d.next_step.options == {"compile": "default"}


def test_a_ladder_of_recompiles_without_buckets_advises_the_planner_buckets():
    records = [record(i, arrival_s=3.0 * i, input_tokens=10 + i, encode_s=2.0, decode_s=0.1)
               for i in range(8)]
    events = [event(f"0/{i}", 3.0 * i + 0.01, 1.9, kind="compile" if i == 0 else "recompile",
                    reason=None if i == 0 else "size mismatch at index 1")
              for i in range(8)]
    data = session(records, events, c1=("compile=default",))
    d = diagnose(data, "c1", DoctorContext(bucket_edges=(12, 16, 20, 32)))
    assert d.tail.causes[0].cause == "compile"
    assert d.next_step.options == {"bucketing": "on"}
    # lengths 10–17 fall in 3 of the 4 buckets: 7 recompiles − 2 that remain
    assert "at most 4 shapes instead of 8: about 5 recompiles (9.50 s) avoided" in \
        d.next_step.predicted
    assert "recompile" in d.verdict


def test_padding_under_buckets_advises_bucketing_off():
    records = calm(input_tokens=17, padded_tokens=128)
    d = diagnose(session(records, c1=("bucketing=on",)), "c1")
    assert d.tail.causes[0].cause == "padding"
    assert d.next_step.options == {"bucketing": "off"}


def test_a_dynamic_batch_window_advises_continuous():
    records = []
    for b in range(10):
        start = 1.0 * b + 0.4
        records += [record(3 * b + k, arrival_s=1.0 * b + 0.1 * k, start_s=start,
                           encode_s=0.01, decode_s=0.02 + 0.01 * k, row_wait_s=0.02 - 0.01 * k,
                           batch_size=3) for k in range(3)]
    d = diagnose(session(records, c1=("batching=dynamic",)), "c1")
    assert d.tail.causes[0].cause == "batch_wait"
    assert d.next_step.options == {"batching": "continuous"}


def test_the_next_segment_says_whether_the_prediction_held():
    ladder = [record(i, arrival_s=3.0 * i, input_tokens=10 + i, encode_s=2.0, decode_s=0.1)
              for i in range(8)]
    events = [event(f"0/{i}", 3.0 * i + 0.01, 1.9, kind="compile" if i == 0 else "recompile")
              for i in range(8)]
    after = calm(8, config_id="c2", t0=30.0, input_tokens=12, padded_tokens=12)
    data = session(ladder + after, events, c1=("compile=default",),
                   c2=("compile=default", "bucketing=on"))
    report = diagnose_session(data, DoctorContext(bucket_edges=(12, 16, 20, 32)))
    (prediction,) = [f for f in report.segments[1].findings if f.finding == "prediction"]
    assert prediction.evidence.startswith("c1's next step (bucketing=on) held: predicted p95")


def test_saturation_needs_offered_above_capacity_or_a_growing_queue():
    assert saturation(calm()) is None
    assert saturation(serial([(0.01, 0.5)] * 30)) is not None


def closed_loop(services: list[float]):
    """One outstanding request: each arrives as the one before ends, nothing waits."""
    out, t = [], 0.0
    for i, service in enumerate(services):
        out.append(record(i, arrival_s=t, encode_s=service * 0.1, decode_s=service * 0.9))
        t = out[-1].end_s
    return out


def test_a_closed_loop_arriving_at_its_own_service_rate_is_not_saturated():
    # the last request slower than the rest: offered (over the first n−1 services) is above
    # the capacity (over all n) although nothing ever queued
    records = closed_loop([0.03] * 9 + [0.06])
    assert records_load(records, "c1").share > 1.0
    assert saturation(records) is None
    d = diagnose(session(records), "c1")
    assert d.healthy and d.next_step is None


def test_cpu_contention_is_the_machine_busy_beyond_the_engine():
    busy = DeviceSample("CPU", "2 cores", 97.0, None, None, None, process_cpu_pct=60.0)
    assert "1.3 cores went to other processes" in cpu_contention(busy, 2).evidence
    alone = replace(busy, util_pct=40.0)
    assert cpu_contention(alone, 2) is None


def test_peak_concurrency_counts_requests_in_the_system_at_once():
    assert peak_concurrency(serial([(0.01, 0.5)] * 5)) == 5
    assert peak_concurrency(calm(5)) == 1


def test_the_json_has_the_issue_shape_and_sorted_causes():
    report = diagnose_session(session(serial([(0.01, 0.5)] * 30)))
    doc = report.as_dict()
    (segment,) = doc["segments"]
    assert list(segment) == ["config_id", "tail", "findings", "verdict", "next_step", "guard_groups"]
    assert list(segment["tail"]) == ["requests", "latency_p95_ms", "causes"]
    shares = [c["share"] for c in segment["tail"]["causes"]]
    assert shares == sorted(shares, reverse=True) and sum(shares) == pytest.approx(1.0)
    assert {c["cause"] for c in segment["tail"]["causes"]} == {
        "queue", "compile", "padding", "batch_wait", "kv_wait", "encode", "decode", "other"}
    assert all(set(item) == {"item", "status", "evidence"} for item in doc["checklist"])


def test_compare_names_the_cause_that_moved():
    a = diagnose(session(serial([(0.01, 0.5)] * 30)), "c1")
    b = diagnose(session(calm()), "c1")
    lines = cause_moves(a, b)
    assert lines[0].startswith("doctor: the tail's largest cause A queue")
    assert "B decode" in lines[0]
    assert lines[1].startswith("  moved: queue −") or lines[1].startswith("  moved: queue -")


def test_the_text_report_shows_verdict_step_causes_and_checklist():
    text = report_text(diagnose_session(session(serial([(0.01, 0.5)] * 30))))
    assert "verdict: p95" in text and "next step: batching=continuous" in text
    assert "queue" in text and "production-readiness checklist:" in text


def test_the_live_window_takes_the_serving_loops_saturation():
    data = session(calm())
    loop = overload_finding(offered=2.0, capacity=1.0, queue_depth=12, overloaded=True)
    diagnosis, checklist = live_doctor(data, "c1", data.records, session_segments(data),
                                       bucket_edges=(), max_batch=8, device_sample=None,
                                       roofline=None, overloaded=loop)
    assert [f.finding for f in diagnosis.findings] == ["saturation"]
    assert "12 queued now" in diagnosis.findings[0].evidence
    assert not diagnosis.healthy and "saturated" in diagnosis.verdict
    assert len(checklist) == 10
    calm_view, _ = live_doctor(data, "c1", data.records, session_segments(data), bucket_edges=(),
                               max_batch=8, device_sample=None, roofline=None)
    assert calm_view.healthy


def test_the_doctor_command_refuses_what_is_not_a_session(tmp_path, capsys):
    from infertop.cli import main
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    assert main(["doctor", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("infertop: error: snapshot") and len(err.strip().splitlines()) == 1
