"""The doctor's attribution: the tail's latency split into causes that add up to it exactly, each
recomputed here another way (cutting each request's life at every mark and every compile's edges
and classifying each piece by its midpoint)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from probe.analysis.attribution import CAUSES, attribute, padding_fraction, tail
from probe.common.units import fmt_ms
from probe.contract.records import CompileEvent, RequestRecord
from tests.probe.doctor_records import event, record, serial


def _recomputed(records: list[RequestRecord], events: list[CompileEvent],
                dynamic: frozenset[str]) -> dict[str, float]:
    """Each cause's ms over the tail, by elementary intervals instead of overlaps."""
    ok = [r for r in records if r.ok]
    p95 = np.percentile([r.latency_ms for r in ok], 95)
    timed = [(e.start_s, e.start_s + (e.duration_s or 0)) for e in events if e.duration_s]
    totals = dict.fromkeys(CAUSES, 0.0)
    for r in (r for r in ok if r.latency_ms >= p95):
        gather = None
        if r.config_id in dynamic:
            mates = [m for m in records if m.config_id == r.config_id and m.start_s == r.start_s]
            before = [m.end_s for m in records
                      if m.config_id in dynamic and m.end_s <= r.start_s + 1e-9]
            gather = min(max([min(m.arrival_s for m in mates), *before]), r.start_s)
        encoded = r.start_s + r.encoder_ms / 1e3
        kv_from = r.start_s - r.kv_wait_ms / 1e3
        cuts = {r.arrival_s, r.start_s, encoded, r.last_token_s, r.end_s, kv_from}
        cuts |= {t for span in timed for t in span}
        if gather is not None:
            cuts.add(gather)
        points = sorted(t for t in cuts if r.arrival_s <= t <= r.end_s)
        frac = padding_fraction(r)
        for t0, t1 in zip(points, points[1:]):
            mid, ms = (t0 + t1) / 2, (t1 - t0) * 1e3
            if any(a < mid < b for a, b in timed):
                totals["compile"] += ms
            elif mid < r.start_s:
                if gather is not None and mid > gather:
                    totals["batch_wait"] += ms
                elif gather is None and mid > kv_from:
                    totals["kv_wait"] += ms
                else:
                    totals["queue"] += ms
            elif mid < encoded:
                totals["padding"] += ms * frac
                totals["encode"] += ms * (1 - frac)
            elif mid < r.last_token_s:
                totals["padding"] += ms * frac
                totals["decode"] += ms * (1 - frac)
            else:
                totals["batch_wait"] += ms
    return totals


@st.composite
def sessions(draw):
    n = draw(st.integers(1, 30))
    dynamic = draw(st.booleans())
    records, t, free_at = [], 0.0, 0.0
    i = 0
    while i < n:
        t += draw(st.floats(0.0, 2.0))
        size = draw(st.integers(1, 3)) if dynamic else 1
        start = max(t, free_at) + draw(st.floats(0.0, 0.2))
        batch_end = start + draw(st.floats(0.01, 1.0))
        for _ in range(min(size, n - i)):
            encode = draw(st.floats(0.0, 0.2))
            decode = draw(st.floats(0.0, batch_end - start - encode)) if \
                batch_end - start > encode else 0.0
            row_wait = max(batch_end - (start + encode + decode), 0.0)
            real = draw(st.integers(1, 100))
            records.append(record(
                i, arrival_s=min(t, start), start_s=start, encode_s=encode, decode_s=decode,
                row_wait_s=row_wait, input_tokens=real,
                padded_tokens=real + draw(st.integers(0, 100)),
                kv_wait_s=0.0 if dynamic else draw(st.floats(0.0, start - min(t, start))),
                error=draw(st.sampled_from([None] * 9 + ["RuntimeError: boom"]))))
            i += 1
        free_at = max(r.end_s for r in records)
    horizon = free_at + 1
    events = [event(f"0/{k}", draw(st.floats(0.0, horizon)), draw(st.floats(0.0, 3.0)),
                    kind=draw(st.sampled_from(["compile", "recompile"])))
              for k in range(draw(st.integers(0, 5)))]
    return records, events, frozenset({"c1"} if dynamic else ())


@given(sessions())
def test_the_shares_add_up_to_the_tail_and_each_matches_its_recomputation(session):
    records, events, dynamic = session
    result = attribute(records, events, dynamic_configs=dynamic)
    ok = [r for r in records if r.ok]
    if not ok:
        assert result.requests == 0
        return
    assert result.latency_p95_ms == pytest.approx(np.percentile([r.latency_ms for r in ok], 95))
    assert result.total_ms == pytest.approx(sum(r.latency_ms for r in tail(records)[0]))
    assert sum(c.ms for c in result.causes) == pytest.approx(result.total_ms, abs=1e-6)
    if result.total_ms > 0:
        assert sum(c.share for c in result.causes) == pytest.approx(1.0)
    again = _recomputed(records, events, dynamic)
    for cause in CAUSES[:-1]:
        assert result.cause(cause).ms == pytest.approx(again[cause], abs=1e-6), cause
    assert abs(result.cause("other").ms) < 1e-6        # consistent records leave nothing over
    assert [c.ms for c in result.causes] == sorted((c.ms for c in result.causes), reverse=True)
    assert result.failed.requests == sum(not r.ok for r in records)


def test_a_compile_waited_on_from_the_queue_counts_as_compile_for_the_waiting_request():
    # r0 triggers a 5 s compile while r1 waits in the queue behind it
    records = [record(0, arrival_s=0.0, encode_s=5.2, decode_s=0.1, stall_ms=5000.0),
               record(1, arrival_s=0.5, start_s=5.3, decode_s=0.1)]
    events = [event("0/0", 0.1, 5.0, request_id="r0")]
    result = attribute(records, events)
    assert [r.id for r in tail(records)[0]] == ["r0"]
    both = attribute(records + [record(2, arrival_s=0.4, start_s=5.6, decode_s=0.1)], events)
    assert both.causes[0].cause == "compile"
    assert result.cause("compile").ms == pytest.approx(5000.0)
    assert "first compile" in result.cause("compile").evidence
    assert result.cause("compile").requests == 1


def test_compile_sub_kinds_fallback_and_limit_are_named_in_the_evidence():
    records = [record(0, arrival_s=0.0, encode_s=0.1, decode_s=4.0)]
    events = [event("0/0", 0.2, 1.0), event("0/1", 1.3, 1.0, kind="recompile",
                                            reason="tensor size mismatch at index 1"),
              event("-", 2.31, 0.0, kind="limit"), event("1/0", 2.5, 0.5),
              event("-", 3.0, 0.0, kind="fallback", reason="compile failed, serving eager")]
    compile_cause = attribute(records, events).cause("compile")
    assert compile_cause.ms == pytest.approx(2500.0)
    for text in ("first compile 1.00 s", "recompile 1.00 s", "eager fallback 500 ms",
                 "recompile limit hit 1×", "size mismatch"):
        assert text in compile_cause.evidence


def test_padding_is_the_pad_share_of_encode_and_decode():
    records = [record(i, arrival_s=i, encode_s=0.1, decode_s=0.3, input_tokens=33,
                      padded_tokens=64) for i in range(20)]
    result = attribute(records)
    assert result.cause("padding").share == pytest.approx((64 - 33) / 64)
    assert "ran at 64" in result.cause("padding").evidence


def test_queue_leads_a_burst_served_one_at_a_time():
    records = serial([(0.01, 0.5)] * 40)
    assert attribute(records).causes[0].cause == "queue"


def test_the_roofline_splits_decode_into_weights_and_overhead():
    records = [record(i, arrival_s=i, decode_s=0.1, output_tokens=10) for i in range(20)]
    decode = attribute(records, roofline_ms={"c1": 2.0}).cause("decode")
    # 10 tokens × 2 ms of weight reads of each request's 100 ms decode: the rest is overhead
    assert f"weights (the roofline) {fmt_ms(20.0 * decode.requests)}" in decode.evidence
    assert "(80% of it)" in decode.evidence and "×" not in decode.evidence   # the multiple:
    # the config's TPOT figure alone (tpot_figure.py), never a second one here


def test_failed_requests_are_counted_apart_with_their_reasons():
    records = serial([(1.0, 0.1)] * 5) + [record(9, arrival_s=9, error="ValueError: too long"),
                                          record(10, arrival_s=10, error="ValueError: too long")]
    result = attribute(records)
    assert result.failed.requests == 2
    assert result.failed.reasons == (("ValueError: too long", 2),)
    assert result.served == 5


def test_no_served_request_has_an_empty_tail():
    result = attribute([record(0, arrival_s=0, error="boom")])
    assert (result.requests, result.top, result.latency_p95_ms) == (0, None, None)


def test_another_selection_explains_other_requests():
    # the hook an SLO uses: explain the requests outside it instead of the p95 tail
    records = serial([(0.01, 0.5)] * 10)
    def slow(rs):
        return (tuple(r for r in rs if r.latency_ms > 2000), 2000.0)

    result = attribute(records, select=slow)
    assert result.requests == sum(r.latency_ms > 2000 for r in records)
    assert result.latency_p95_ms == 2000.0
