"""An engine handed another session keys its ledgers by that session's config ids: a warm
switch's side engine prewarms under its own session's c1 and is cut over into the journaled
session, where the same options are c3 — the prewarm's compile seconds and energy are c3's,
never the baseline c1's (t5-tiny, dynamo's eager backend, a counter rising at each read)."""

from __future__ import annotations

from probe.contract.options import OptConfig, parse_opts
from probe.contract.session import Session
from probe.engine.observe.energy_ledger import EnergyLedger
from tests.conftest import serve
from tests.probe.test_energy_engine import RisingCounter

WARM = ("decode=fullgraph", "compile=default", "bucketing=on")


def test_a_prewarmed_engine_cut_over_charges_the_config_it_serves(make_engine):
    side = make_engine(*WARM, buckets=(16,), max_new_tokens=4)
    side.energy = EnergyLedger(RisingCounter())
    side.set_options(side.options)
    assert side.config_id == "c1"
    side.prewarm(2)
    side.flush_probes()
    prewarm = side.session.freeze()
    compile_s = sum(e.compile_s for e in prewarm.compile_ledger)
    assert compile_s > 0 and side.energy.config_energy("c1").busy_s > 0

    serving = Session()         # the journaled session: c1 baseline, c2 another config
    serving.config_id(OptConfig())
    serving.config_id(parse_opts(["decode=fullgraph"]))
    side.session, side.config_id = serving, ""      # the cut over, as engine_child does it
    side.set_options(parse_opts(WARM))
    assert side.config_id == "c3"
    serve(side, [(10, 3)])
    side.flush_probes()
    data = side.session.freeze()
    assert {e.config_id for e in data.compile_ledger} == {"c3"}
    assert abs(sum(e.compile_s for e in data.compile_ledger) - compile_s) < 1e-9
    assert set(data.energy) == {"c3"} and data.energy["c3"].busy_s > 0
    assert side.energy.config_energy("c1").busy_s == 0      # nothing left under c1


def test_a_warm_switch_s_side_compiles_are_its_segment_s_in_the_saved_session(make_engine):
    """Issue 49: after a warm switch the segment and `snapshot show` said "compiles 0 … compile
    0.0 ms … graphs 0" while the ledger held the graphs. The side engine's prewarm compiles,
    carried into the session it joins, are the new config's compiles, graphs and seconds —
    the same as its ledger's, read back from the saved session — placed on the session's
    clock, and the baseline's requests served meanwhile stay warm (nobody waited on them)."""
    import json

    from probe.analysis.side_compile_cost import side_compiles
    from probe.analysis.stats import session_segments
    from probe.analysis.steady_state import cold_chain
    from probe.engine.session_swap import carry_side_compiles
    from probe.session_store.snapshot import saved_session, snapshot_document
    from tests.conftest import synthetic_record

    side = make_engine(*WARM, buckets=(16,), max_new_tokens=4)
    side_session, side_start = side.session, side.clock.start
    side.prewarm(2)
    prewarm = side_session.freeze()
    assert prewarm.events and {e.config_id for e in prewarm.events} == {"c1"}
    compile_end = max(e.start_s + (e.duration_s or 0) for e in prewarm.events)

    serving = Session(per_visit=True)       # the journaled session: c1 served all along
    serving.config_id(OptConfig())
    before_s = 100.0                        # the session began this long before the side engine
    for i in range(8):                      # before the side engine, then while it compiled
        start = before_s - 8 + i if i < 4 else before_s + compile_end * (i - 3) / 5
        serving.add_record(synthetic_record(f"r{i}", i, latency_ms=50 if i < 4 else 90,
                                            start_s=start))
    side.clock.start = side_start - before_s        # the cut over: the session's clock
    side.session, side.config_id = serving, ""
    side.set_options(parse_opts(WARM))
    assert side.config_id == "c2"
    assert carry_side_compiles(side, side_session, side_start, "c1") == len(prewarm.events)
    serve(side, [(10, 3)], start_seq=8)
    side.flush_probes()

    document = json.loads(json.dumps(snapshot_document(side.session.freeze(), environment={},
                                                       model={}, trace={})))
    data = saved_session(document)
    segment = {s.config_id: s for s in session_segments(data)}["c2"]
    ledger = [e for e in data.compile_ledger if e.config_id == "c2" and e.compile_s > 0]
    assert segment.compiles + segment.recompiles == len(ledger) > 0
    assert segment.graphs == len(ledger)
    assert abs(segment.compile_s - sum(e.compile_s for e in ledger)) < 1e-6
    side_events = [e for e in data.events if e.config_id == "c2"]
    assert all(e.beside == "c1" and e.start_s >= before_s for e in side_events)
    chain = cold_chain(data.records, data.events)
    assert all(chain.is_warm(r) for r in data.records if r.config_id == "c1")
    found = side_compiles(data, "c2")
    assert found is not None and found.beside == "c1" and found.graphs == segment.graphs
    assert found.cost is not None and found.cost.slowdown > 1     # 90 ms per token against 50
    assert "beside c1" in found.text() and "serving slowed" in found.text()


def test_an_engine_with_no_journal_counts_visits_as_the_journaled_one(make_engine):
    """The dashboard's engine without a journal (a state folder it cannot write) kept its own
    session, where a return to eager merged into c1 again."""
    from probe.engine.session_swap import count_visits

    engine = make_engine()
    serve(engine, [(10, 2)])
    count_visits(engine)
    assert engine.config_id == "c1" and len(engine.session.freeze().records) == 1
    engine.set_options(parse_opts(["decode=fullgraph"]))
    assert engine.config_id == "c2"
    engine.set_options(OptConfig())
    assert engine.config_id == "c3"
