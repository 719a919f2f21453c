"""What panels pair and pick from a snapshot."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from probe.contract.options import OptConfig
from tests.tui.synthetic import ASKED, CONTINUOUS_NOTE, ERRORS, MAX_BATCH
from tui import derive


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


def test_kv_held_sums_the_current_configs_requests(stages):
    bucketing = stages["bucketing"]
    held = derive.kv_held(bucketing)
    c3 = [r for r in bucketing.recent if r.config_id == "c3" and r.ok]
    assert held.requests == len(c3)
    assert held.allocated_bytes == sum(r.kv_cache_bytes for r in c3)
    assert held.used_bytes == sum(r.kv_cache_used_bytes for r in c3)
    assert held.used_bytes < held.allocated_bytes      # bucketing pads the cross-attention cache


def test_the_paged_budget_holds_requests_under_each_layout(stages):
    paged = stages["paged"]
    budget = derive.kv_budget(paged)
    assert budget is not None and budget.pool.layout == "paged"
    # recomputed from the records: the mean bytes a served c5 request held
    c5 = [r for r in paged.recent if r.config_id == "c5" and r.ok]
    mean_held = sum(r.kv_cache_bytes for r in c5) / len(c5)
    assert budget.paged_requests == int(budget.pool.budget_bytes // int(mean_held))
    assert budget.static_requests == MAX_BATCH    # the pool has the budget of 8 static slots
    assert budget.paged_requests > 4 * budget.static_requests
    assert derive.kv_budget(stages["continuous"]) is None     # the static layout has no pool
    no_slot = replace(paged, segments=tuple(
        replace(s, kv_pool=replace(s.kv_pool, static_slot_bytes=0)) if s.kv_pool else s
        for s in paged.segments))
    assert derive.kv_budget(no_slot).static_requests is None


def test_engine_clock_adds_local_time_to_the_snapshots(stages):
    compiling = stages["compiling"]
    assert derive.engine_now_s(compiling, 0.0) == compiling.t_s
    assert derive.engine_now_s(compiling, 4.5) == compiling.t_s + 4.5
    assert derive.engine_now_s(compiling, -1.0) == compiling.t_s     # a clock set back


@pytest.mark.parametrize("compile_id, function, shown", [
    ("0/3", None, "frame 0"), ("12/0", None, "frame 12"), ("0/3", "decode_step", "decode_step"),
    ("0/0_1", "", "frame 0")])
def test_a_compile_without_a_function_name_is_named_by_its_frame(compile_id, function, shown):
    assert derive.compile_function(compile_id, function) == shown


def test_labels(stages):
    assert derive.config_label(stages["bucketing"], "c3") == "compile=default bucketing=on"
    assert derive.config_label(stages["bucketing"], "c1") == "baseline"


def _states(asked: OptConfig, view, asked_since_start: bool = True) -> dict:
    return {s.name: s for s in derive.option_states(asked, view, asked_since_start)}


def test_an_option_is_pending_until_the_engine_has_received_and_applied_it(stages):
    baseline = stages["baseline"]
    asked = OptConfig(bucketing="on")
    # the engine has not received it: nothing since it started, or older options
    for received in (None, OptConfig()):
        states = _states(asked, replace(baseline, requested_options=received))
        assert states["bucketing"].status == "pending", received
        assert (states["bucketing"].served, states["bucketing"].asked) == ("off", "on")
        assert all(s.status == "served" for n, s in states.items() if n != "bucketing")
    # received, not applied yet (a request is still being served under the old ones)
    waiting = replace(baseline, requested_options=asked, options_pending=True)
    assert _states(asked, waiting)["bucketing"].status == "pending"
    # received and applied, yet served otherwise: the engine changed it
    applied = replace(baseline, requested_options=asked, options_pending=False)
    assert _states(asked, applied)["bucketing"].status == "changed"
    assert _states(asked, None)["bucketing"].status == "served"    # no engine: what was asked


def test_without_asking_since_the_start_the_engine_has_the_options_it_started_with(stages):
    baseline = stages["baseline"]
    assert baseline.requested_options is None
    states = _states(OptConfig(quant="int8"), baseline, asked_since_start=False)
    assert states["quant"].status == "changed"     # started with int8, serves off: its choice
    assert _states(OptConfig(quant="int8"), baseline)["quant"].status == "pending"
    pending = replace(baseline, options_pending=True)
    assert _states(OptConfig(quant="int8"), pending, False)["quant"].status == "pending"


def test_an_option_the_engine_set_itself_is_changed_with_its_reason(stages):
    continuous = stages["continuous"]                     # asked hf-generate, serves fullgraph
    assert continuous.requested_options == ASKED["continuous"]
    states = _states(ASKED["continuous"], continuous)
    assert states["decode"].status == "changed"
    assert states["decode"].reason == CONTINUOUS_NOTE
    assert states["batching"].status == "served"
    # Served without a note naming the option: still changed (never pending for ever), and
    # the reason is unknown rather than guessed from another option's note.
    asked = OptConfig(batching="continuous", kv_cache="off")
    kv = _states(asked, replace(continuous, requested_options=asked))
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


def test_compile_cost_says_why_there_is_no_break_even_yet(stages):
    measured = stages["measured"]                         # c2 compile=default, c1 its twin
    cost = derive.compile_cost(measured)
    found = measured.break_even
    assert (cost.status, cost.compiled_config, cost.eager_config) == ("repaid", "c2", "c1")
    assert cost.requests == math.ceil(found.requests) and cost.requests > 1
    # recomputed another way: compile seconds over the per-request saving
    assert found.requests == pytest.approx(found.compile_s * 1e3 / found.saved_ms_per_request)
    never = replace(measured, break_even=replace(found, requests=math.inf))
    assert derive.compile_cost(never).status == "never"
    quick = replace(measured, break_even=replace(found, requests=0.2))
    assert derive.compile_cost(quick).requests == 1
    # c2 has served nothing yet; its twin c1 has: measuring
    assert derive.compile_cost(stages["compiling"]).status == "measuring"
    assert stages["compiling"].break_even is None
    # c3 (compile=default bucketing=on): nobody served bucketing=on eager
    no_twin = derive.compile_cost(stages["bucketing"])
    assert no_twin.status == "no twin" and no_twin.twin == OptConfig(bucketing="on")
    assert derive.compile_cost(stages["baseline"]).status == "eager"
    frozen = replace(measured, break_even=None,
                     options=OptConfig(compile="default", freezing="on"))
    # its twin turns freezing off too: c1's options
    assert (derive.compile_cost(frozen).status, derive.compile_cost(frozen).eager_config) == (
        "measuring", "c1")


def test_presets_have_random_weights(stages):
    assert derive.random_weights(stages["baseline"])             # t5-small
    assert not derive.random_weights(replace(stages["baseline"], model="/models/my-t5"))
