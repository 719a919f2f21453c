"""Recompiles grouped by the guard that failed, with the fix and its prediction: checked on a
real saved session against counts made here from its events and records, and on synthetic
events where the grouping is known."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from probe.analysis.guard_groups import first_failure, guard_groups
from probe.contract.records import CompileEvent, RequestRecord
from probe.session_store.snapshot import read_document, saved_session

SESSION = Path(__file__).resolve().parents[2] / "screenshots/sessions/3-bucketing.json"


def _event(i: int, function: str, request: str | None, reason: str | None,
           seconds: float = 1.0, kind: str = "recompile") -> CompileEvent:
    return CompileEvent(compile_id=f"{i}/1", kind=kind, function=function, start_s=float(i),
                        duration_s=seconds, reason=reason, request_id=request,
                        config_id="c1")


def _size(tensor: str, index: int, expected: int, actual: int) -> str:
    return (f"0/0: tensor '{tensor}' size mismatch at index {index}. expected {expected}, "
            f"actual {actual}")


def _record(rid: str, length: int) -> RequestRecord:
    return RequestRecord(id=rid, seq=0, config_id="c1", input_tokens=length,
                         padded_tokens=length, output_tokens=4, arrival_s=0.0, start_s=0.0,
                         first_token_s=0.1, end_s=1.0, queue_ms=0.0, compile_stall_ms=0.0,
                         encoder_ms=1.0, decoder_ms=1.0, ttft_ms=100.0, tpot_ms=1.0,
                         latency_ms=1000.0, kv_cache_bytes=0, kv_cache_used_bytes=0,
                         kv_self_attention_bytes=0, kv_cross_attention_bytes=0)


def test_a_real_sessions_recompiles_are_one_dimension_across_three_functions() -> None:
    document = read_document(SESSION)
    data = saved_session(document)
    edges = document["settings"]["bucket_edges"]
    events = [e for e in data.events if e.config_id == "c2"]
    records = [r for r in data.records if r.config_id == "c2"]
    (group,) = guard_groups(events, records, edges)
    recompiles = [e for e in events if e.kind == "recompile"]
    by_id = {r.id: r.input_tokens for r in records}
    lengths = list(dict.fromkeys(by_id[e.request_id] for e in recompiles))
    assert group.dimension == "the input's length"
    assert group.recompiles == len(recompiles)
    assert set(group.functions) == {e.function for e in recompiles} and len(group.functions) == 3
    assert list(group.sizes) == lengths
    assert abs(group.seconds - sum(e.duration_s or 0 for e in recompiles)) < 1e-9
    shapes = len({min(edge for edge in edges if edge >= length) for length in lengths})
    assert group.fix is not None and group.fix.change == {"bucketing": "on"}
    assert group.fix.avoided_recompiles == len(recompiles) - (shapes - 1) * 3
    assert f"{shapes} shapes" in group.fix.text


@given(st.lists(st.integers(2, 500), min_size=2, max_size=12, unique=True))
def test_one_length_seen_by_every_function_is_one_group(lengths: list[int]) -> None:
    records = [_record(f"r{i}", n) for i, n in enumerate(lengths)]
    events, previous = [], lengths[0]
    for i, n in enumerate(lengths[1:], start=1):
        events += [_event(i, "encode", f"r{i}", _size("input_ids", 1, previous, n)),
                   _event(i, "decode_step", f"r{i}",
                          _size("cache.cross_attention_cache.layers[0].keys", 2, previous, n))]
        previous = n
    (group,) = guard_groups(events, records)
    assert group.dimension == "the input's length" and group.recompiles == len(events)
    assert list(group.sizes) == lengths[1:] and len(group.functions) == 2
    if len(events) == 2:        # one recompile a function: a dynamic compile would cost as much
        assert group.fix is None
    else:
        assert group.fix is not None and group.fix.change == {"dynamic": "on"}
        assert group.fix.avoided_recompiles == len(events) - 2


def test_two_dimensions_that_change_apart_are_two_groups_and_a_value_guard_has_no_fix() -> None:
    records = [_record("r1", 10), _record("r2", 20), _record("r3", 30)]
    events = [_event(1, "encode", "r1", _size("input_ids", 1, 5, 10)),
              _event(2, "encode", "r2", _size("input_ids", 1, 10, 20)),
              _event(3, "decode_step", "r1", _size("past", 2, 3, 7)),
              _event(4, "decode_step", "r3", _size("past", 2, 7, 9)),
              _event(5, "decode_step", "r3", "0/1: ___check_obj_id(L['self'], 140)")]
    groups = guard_groups(events, records)
    assert sorted(g.dimension for g in groups) == sorted(
        ["the input's length", "past.size(2)", "___check_obj_id(L['self'], N)"])
    value = next(g for g in groups if g.dimension.startswith("___check_obj_id"))
    assert value.fix is None and value.sizes == ()


def test_the_first_failure_is_the_newest_entrys() -> None:
    failure = first_failure("0/1: tensor 'x' size mismatch at index 1. expected 69, actual 29; "
                            "0/0: tensor 'x' size mismatch at index 1. expected 42, actual 29")
    assert failure is not None and (failure.guard, failure.size) == ("x.size(1)", 29)
    assert first_failure(None) is None


def test_the_doctors_json_carries_the_groups(capsys) -> None:
    from infertop.cli import main
    assert main(["doctor", str(SESSION), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    c2 = next(s for s in report["segments"] if s["config_id"] == "c2")
    (group,) = c2["guard_groups"]
    assert group["dimension"] == "the input's length" and group["fix"]["change"] == {
        "bucketing": "on"}
