"""Issue 49: going back to the eager baseline reused the id c1, and c1's p95 went from 7.24 s
to 130 s, the compiles' backlog merged into the baseline's row. In the dashboard's session a
config served again after another opens a new id, and so a segment of its own: an earlier
segment's figures never change once the user left it. bench's passes, which alternate
configs on one engine, keep one id per config."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from probe.analysis.stats import session_segments
from probe.contract.options import OptConfig
from probe.contract.session import Session
from tests.conftest import synthetic_record

EAGER = OptConfig()
COMPILED = OptConfig(compile="default")
OTHER = OptConfig(compile="default", bucketing="on")


def test_a_return_to_a_config_opens_a_new_segment_and_leaves_the_first_as_it_was():
    session = Session(per_visit=True)
    seq = 0

    def serve(options: OptConfig, latency_ms: float, n: int) -> str:
        nonlocal seq
        config_id = session.config_id(options)
        for _ in range(n):
            session.add_record(synthetic_record(f"r{seq}", seq, latency_ms=latency_ms,
                                                config_id=config_id))
            seq += 1
        return config_id

    assert serve(EAGER, 100, 10) == "c1"
    before = {s.config_id: s for s in session_segments(session.freeze())}["c1"]
    assert serve(COMPILED, 5000, 5) == "c2"
    assert serve(EAGER, 130_000, 5) == "c3"         # the backlog: its own segment
    after = {s.config_id: s for s in session_segments(session.freeze())}
    assert after["c1"] == before
    assert after["c3"].latency_ms.p95 > 100_000
    assert session.freeze().configs["c3"].options == EAGER


def test_the_config_served_keeps_its_id_when_asked_again_and_across_a_restart():
    session = Session(per_visit=True)
    assert session.config_id(EAGER) == session.config_id(EAGER) == "c1"
    assert session.config_id(COMPILED) == "c2"
    session.add_record(synthetic_record("r0", 0, latency_ms=10, config_id="c2"))
    restarted = Session(per_visit=True)         # an engine restarted on the same config
    restarted.restore(session.freeze())
    assert restarted.config_id(COMPILED) == "c2"
    assert restarted.config_id(EAGER) == "c3"


def test_a_live_ab_s_arm_is_registered_without_leaving_the_config_served():
    """Arm A registers arm B's config (KnownConfig) and serves on under its own id; adopted,
    arm B's engine continues the journaled session under the id it registered."""
    arm_a = Session(per_visit=True)
    assert arm_a.config_id(EAGER) == "c1"
    assert arm_a.register(COMPILED) == "c2"
    assert arm_a.config_id(EAGER) == "c1"           # A kept: still c1
    adopted = Session(per_visit=True)
    adopted.restore(arm_a.freeze())
    assert adopted.config_id(COMPILED) == "c2"


def test_without_per_visit_identical_options_share_one_id():
    session = Session()
    assert [session.config_id(o) for o in (EAGER, COMPILED, EAGER, COMPILED)] == \
        ["c1", "c2", "c1", "c2"]


@given(st.lists(st.sampled_from([EAGER, COMPILED, OTHER]), min_size=1, max_size=30))
def test_an_id_is_never_served_again_after_another_was(choices):
    session = Session(per_visit=True)
    ids = [session.config_id(options) for options in choices]
    left: set[str] = set()
    for previous, now in zip(ids, ids[1:]):
        assert now not in left
        if now != previous:
            left.add(previous)
    for options, config_id in zip(choices, ids):
        assert session.freeze().configs[config_id].options == options
    for previous, now, asked_before, asked in zip(ids, ids[1:], choices, choices[1:]):
        assert (now == previous) == (asked == asked_before)
