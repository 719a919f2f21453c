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
