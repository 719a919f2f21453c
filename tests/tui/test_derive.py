"""What panels pair and pick from a snapshot."""

from __future__ import annotations

from dataclasses import replace

import pytest

from probe.options import OptConfig
from tui import derive
from tui.synthetic import CONTINUOUS_NOTE, ERRORS


def test_config_changes_are_read_from_the_requests(stages):
    bucketing = stages["bucketing"]
    changes = derive.config_changes(bucketing.recent)
    firsts = {}
    for record in sorted(bucketing.recent, key=lambda r: r.seq):
        firsts.setdefault(record.config_id, record.start_s)
    expected = [(cid, t) for cid, t in firsts.items()][1:]     # the oldest is no change
    assert [(c.config_id, c.t_s) for c in changes] == expected


def test_previous_config_is_the_last_other_config_served(stages):
    assert derive.previous_config_id(stages["bucketing"]) == "c2"
    assert derive.previous_config_id(stages["compiling"]) == "c1"   # c2 has served nothing
    assert derive.previous_config_id(stages["baseline"]) is None


def test_previous_config_after_toggling_back(stages):
    bucketing = stages["bucketing"]
    back = replace(bucketing, config_id="c1", options=bucketing.configs[0].options)
    assert derive.previous_config_id(back) == "c3"


def test_kv_waste_sums_the_current_configs_requests(stages):
    bucketing = stages["bucketing"]
    waste = derive.kv_waste(bucketing)
    c3 = [r for r in bucketing.recent if r.config_id == "c3" and r.ok]
    assert waste.requests == len(c3)
    held = sum(r.kv_cache_bytes for r in c3)
    assert waste.allocated_bytes == held
    assert waste.waste_fraction == pytest.approx(1 - sum(r.kv_cache_used_bytes for r in c3) / held)
    assert 0 < waste.waste_fraction < 1        # bucketing pads the cross-attention cache


def test_compile_clock_adds_local_time_to_the_engine_clock(stages):
    compiling = stages["compiling"]
    base = compiling.t_s - compiling.compiling_since_s
    assert derive.compiling_elapsed_s(compiling, 0.0) == base
    assert derive.compiling_elapsed_s(compiling, 4.5) == base + 4.5
    assert derive.compiling_elapsed_s(stages["baseline"], 4.5) is None


def test_labels(stages):
    assert derive.config_label(stages["bucketing"], "c3") == "compile=default bucketing=on"
    assert derive.config_label(stages["bucketing"], "c1") == "baseline"


def test_an_option_asked_for_is_pending_until_a_request_starts_after_it_was_sent(stages):
    baseline = stages["baseline"]
    asked = OptConfig(bucketing="on")
    sent_s = baseline.recent[-1].start_s - 0.5            # the last request started after
    assert not derive.served_since(baseline, sent_s)      # … but within the margin
    assert derive.served_since(baseline, sent_s - derive.APPLY_MARGIN_S)
    assert derive.served_since(baseline, None)            # nothing sent since the start
    assert not derive.served_since(None, 0.0)
    pending = derive.option_states(asked, baseline, served=False)
    assert [(s.name, s.served, s.asked) for s in pending if s.status == "pending"] == [
        ("bucketing", "off", "on")]
    assert all(s.status == "served" for s in pending if s.name != "bucketing")


def test_an_option_the_engine_set_itself_is_changed_with_its_reason(stages):
    continuous = stages["continuous"]                     # asked hf-generate, serves fullgraph
    states = {s.name: s for s in derive.option_states(OptConfig(batching="continuous"),
                                                      continuous, served=True)}
    assert states["decode"].status == "changed"
    assert states["decode"].reason == CONTINUOUS_NOTE
    assert states["batching"].status == "served"
    # Served without a note naming the option: still changed (never pending for ever), and
    # the reason is unknown rather than guessed from another option's note.
    kv = {s.name: s for s in derive.option_states(
        OptConfig(batching="continuous", kv_cache="off"), continuous, served=True)}
    assert kv["kv_cache"].status == "changed" and kv["kv_cache"].reason is None


def test_notes_name_options_as_the_engine_writes_them():
    notes = ("int8 weight-only quantization is not available here (ImportError: x); quant "
             "stays off", "continuous batching keeps each slot's KV cache: kv_cache=on",
             "freezing is an inductor option: it does nothing without compile")
    assert derive.note_naming("quant", notes) == notes[0]
    assert derive.note_naming("kv_cache", notes) == notes[1]
    assert derive.note_naming("freezing", notes) == notes[2]
    assert derive.note_naming("batching", notes) is None     # "batching" alone names nothing
    assert derive.note_naming("decode", notes) is None


def test_failures_count_the_latest_reason_and_kinds(stages):
    failing = stages["failing"]
    failures = derive.failures(failing)
    failed = [r for r in failing.recent if not r.ok]
    assert failures.failed == failing.replay.failed == len(failed) == failures.recent_failed
    assert failures.latest is failed[-1] and failures.latest.error == ERRORS[1]
    assert dict(failures.by_kind) == {
        "OutOfMemoryError": sum(r.error == ERRORS[0] for r in failed),
        "RuntimeError": sum(r.error == ERRORS[1] for r in failed)}
    assert failures.by_kind[0][0] == "OutOfMemoryError"          # most first
    none = derive.failures(stages["baseline"])
    assert none.failed == 0 and none.latest is None and none.by_kind == ()


@pytest.mark.parametrize("error, kind", [
    ("OutOfMemoryError: CUDA out of memory: 2 GiB", "OutOfMemoryError"),
    ("unknown error", "unknown error"), (": nothing before", "error"), ("", "error")])
def test_error_kind_is_the_text_before_the_first_colon(error, kind):
    assert derive.error_kind(error) == kind
