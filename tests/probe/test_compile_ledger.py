"""The compile ledger's bookkeeping on synthetic calls and events: totals, the bounded median,
compile attribution by config and time, step shares, pay-back, and the session JSON."""

import json
import statistics
from types import MappingProxyType

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from probe.analysis.compile_ledger import (
    SAMPLE_CAP,
    CompileWindow,
    GraphTally,
    LedgerBook,
    continued,
    ledger_summary,
    paid_back,
    step_shares,
    with_pay_back,
)
from probe.common.clock import SessionClock
from probe.common.errors import BadInput
from probe.contract.options import parse_opts
from probe.contract.records import CompileEvent, LedgerEntry
from probe.contract.session import ConfigEntry, SessionData
from probe.engine.observe.graph_timer import GraphTimer
from probe.session_store.snapshot import saved_session, session_data, snapshot_document

times = st.lists(st.floats(min_value=0.0, max_value=1e4, allow_nan=False), max_size=300)


@given(times)
def test_total_is_the_sum_of_the_calls_and_the_median_of_all_below_the_cap(ms):
    tally = GraphTally()
    for t in ms:
        tally.add(t)
    assert tally.calls == len(ms)
    assert tally.total_ms == pytest.approx(sum(ms), abs=1e-6)
    # the one percentile definition's median: numpy interpolates, so to the last bit or two
    assert tally.median_ms() == (pytest.approx(statistics.median(ms), rel=1e-12) if ms else None)


def test_above_the_cap_the_median_is_of_a_sample_of_the_calls():
    tally = GraphTally(seed=3)
    ms = [float(i) for i in range(5 * SAMPLE_CAP)]
    for t in ms:
        tally.add(t)
    assert tally.calls == len(ms) and len(tally.sample) == SAMPLE_CAP
    assert set(tally.sample) <= set(ms)
    # a uniform sample of 0…5119: its median lands near the middle, not at the first calls'
    assert 0.3 * len(ms) < tally.median_ms() < 0.7 * len(ms)


def _event(start_s, duration_s, config_id="c1", kind="compile", request_id=None):
    return CompileEvent(compile_id="0/0", kind=kind, function="decode_step", start_s=start_s,
                        duration_s=duration_s, reason=None, request_id=request_id,
                        config_id=config_id)


def test_a_compile_is_charged_to_the_call_it_started_in_even_when_collected_first():
    book = LedgerBook()
    graph = ("c1", "decode_step", "(1, 1) int64")
    book.add_call(graph, 2.0, compiled_window=CompileWindow(1.0, 3.0, ("r1",)))
    early = _event(5.5, 0.25)        # its call has not returned yet: waits
    book.attribute([_event(1.5, 0.5), _event(1.6, 0.1, config_id="c2"), early,
                    _event(2.0, 9.0, kind="limit")])
    first = {e.function: e for e in book.entries()}["decode_step"]
    assert first.compile_s == 0.5 and first.stalled_requests == ("r1",)
    other = ("c1", "encode", "(1, 7) int64")
    book.add_call(other, None, compiled_window=CompileWindow(5.0, 6.0, ()))   # a rehearsal
    book.attribute([])
    entries = {e.function: e for e in book.entries()}
    assert entries["encode"].compile_s == 0.25 and entries["encode"].calls == 0
    assert entries["encode"].stalled_requests == ()


def _entry(config_id, calls, total_ms, compile_s=0.0, function="decode_step", key="k"):
    return LedgerEntry(config_id=config_id, function=function, key=key, calls=calls,
                       runtime_ms_total=total_ms, runtime_ms_median=None, compile_s=compile_s)


@given(st.integers(1, 10_000), st.floats(0.01, 100), st.floats(0.01, 100),
       st.floats(0.0, 1e3), st.integers(1, 10_000))
def test_paid_back_is_the_calls_saving_against_the_compile(calls, compiled_ms, eager_ms,
                                                            compile_s, eager_calls):
    compiled = _entry("c1", calls, calls * compiled_ms, compile_s)
    eager = _entry("c2", eager_calls, eager_calls * eager_ms)
    saved = calls * (eager_ms - compiled_ms) / 1000
    if abs(saved - compile_s) > 1e-6 * max(1.0, compile_s):   # away from the float tie
        assert paid_back(compiled, eager) == (saved >= compile_s)
    assert paid_back(compiled, None) is None
    assert paid_back(compiled, _entry("c2", 0, 0.0)) is None


CONFIGS = MappingProxyType({
    "c1": ConfigEntry("c1", parse_opts(["decode=fullgraph", "compile=default"])),
    "c2": ConfigEntry("c2", parse_opts(["decode=fullgraph"])),
    "c3": ConfigEntry("c3", parse_opts(["decode=fullgraph", "compile=default",
                                        "precision=bf16"]))})


def test_pay_back_is_judged_against_the_eager_twin_only():
    entries = [_entry("c1", 100, 100.0, 0.05), _entry("c1", 100, 100.0, 0.5, key="other"),
               _entry("c2", 10, 20.0), _entry("c3", 100, 50.0, 0.01)]
    judged = {(e.config_id, e.key): e.paid_back for e in with_pay_back(entries, CONFIGS)}
    # c1 saves 100 × (2 − 1) ms = 0.1 s: over 0.05 s, short of 0.5 s only where a twin
    # call of the same key exists; c3 (bf16) has no eager twin in the session
    assert judged == {("c1", "k"): True, ("c1", "other"): None, ("c2", "k"): None,
                      ("c3", "k"): None}
    assert ledger_summary(with_pay_back(entries, CONFIGS), "c1") == (
        "ledger 2 graphs · 1 paid back · 0 not yet · 1 no eager twin")


@given(st.lists(st.tuples(st.sampled_from(["c1", "c2"]), st.floats(0.0, 1e6)), max_size=30))
def test_step_shares_of_a_config_sum_to_at_most_one(rows):
    entries = [_entry(cid, 1, ms, key=str(i)) for i, (cid, ms) in enumerate(rows)]
    shares = step_shares(entries)
    for config_id in ("c1", "c2"):
        mine = [v for (cid, _, _), v in shares.items() if cid == config_id]
        known = [v for v in mine if v is not None]
        assert all(0.0 <= v <= 1.0 for v in known)
        assert sum(known) <= 1.0 + 1e-9


def _document(ledger):
    data = SessionData(configs=CONFIGS, compile_ledger=tuple(ledger))
    return json.loads(json.dumps(snapshot_document(data, environment={}, model={}, trace={})))


def test_the_ledger_survives_the_session_json_and_is_read_strictly():
    entry = LedgerEntry(config_id="c1", function="encode", key="(1, 10) int64", calls=4,
                        runtime_ms_total=8.5, runtime_ms_median=2.0, compile_s=1.25,
                        stalled_requests=("r0",), paid_back=False, median_of=4)
    document = _document([entry])
    assert document["compile_ledger"][0]["stalled_requests"] == ["r0"]
    assert saved_session(document).compile_ledger == (entry,)
    del document["compile_ledger"]                 # a session saved before the ledger
    assert session_data(document).compile_ledger == ()
    for bad in ({"calls": -1}, {"median_of": 5}, {"config_id": "c9"}, {"compile_s": -1.0}):
        broken = _document([entry])
        broken["compile_ledger"][0].update(bad)
        with pytest.raises(BadInput, match="compile_ledger"):
            saved_session(broken)


def test_rekey_moves_tallies_and_waiting_events_to_the_new_sessions_ids():
    """probe/engine/session_swap.py: the same graphs under the new ids; a config the new
    session has not registered is dropped; an event waiting for its call follows too."""
    book = LedgerBook()
    window = CompileWindow(1.0, 2.0, ("r0",))
    book.add_call(("c1", "encode", "k"), 2.0, compiled_window=window)
    book.add_call(("c2", "encode", "k"), 3.0)
    book.attribute([CompileEvent("0/0", "compile", "encode", 1.5, 0.5, None, "r0", "c1")])
    early = CompileEvent("0/1", "recompile", "encode", 9.0, 0.25, None, "r1", "c1")
    book.attribute([early])                 # no call holds it yet: it waits
    book.rekey({"c1": "c3", "c2": None})
    (entry,) = book.entries()
    assert (entry.config_id, entry.calls, entry.compile_s) == ("c3", 1, 0.5)
    book.add_call(("c3", "encode", "k"), 1.0,
                  compiled_window=CompileWindow(8.5, 9.5, ("r1",)))
    book.attribute([])
    (entry,) = book.entries()
    assert entry.compile_s == 0.75 and entry.stalled_requests == ("r0", "r1")


def test_continued_adds_an_earlier_engines_entry():
    earlier = LedgerEntry("c2", "encode", "k", 4, 8.0, 2.0, 30.0, ("r0",), True, 4)
    now = LedgerEntry("c2", "encode", "k", 20, 40.0, 1.5, 1.0, ("r5", "r0"), False, 20)
    both = continued(earlier, now)
    assert (both.calls, both.runtime_ms_total, both.compile_s) == (24, 48.0, 31.0)
    assert both.stalled_requests == ("r0", "r5") and both.paid_back is None
    assert (both.runtime_ms_median, both.median_of) == (1.5, 20)    # the larger sample's
    assert continued(None, now) is now


def test_a_live_view_of_the_requests_is_read_when_a_compile_ran():
    """Continuous batching hands the graph timer a live view of its running ids instead of a
    copy a step: a compile window holds the ids as they were during that call, copied."""
    class Compiling:
        compile_seconds = 0.0

    class Frozen(SessionClock):
        def to_session_s(self, perf_counter_value: float) -> float:
            return 1.0                  # every call spans the session's second 1.0

    probe = Compiling()
    book = LedgerBook()
    timer = GraphTimer(book, Frozen(), probe, torch.device("cpu"))  # type: ignore[arg-type]
    running = {0: "r0", 3: "r3"}
    timer.set_context("c1", running.values())

    def step(compiles: bool) -> None:
        if compiles:
            probe.compile_seconds += 0.5

    timed = timer.wrap("step", step, compiled=True)
    timed(False)                    # no compile: nothing read
    running[5] = "r5"
    timed(True)                     # a compile: the three running now
    del running[0]
    book.attribute([CompileEvent("0/0", "compile", "step", 1.0, 0.5, None, "r3", "c1")])
    (entry,) = book.entries()
    assert entry.calls == 2 and entry.stalled_requests == ("r0", "r3", "r5")
