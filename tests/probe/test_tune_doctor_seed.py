"""`tune --search quick` starts from the doctor's next step on the default config's measured
run, then the greedy path. A fake measure stands in for the engine: the default's run is a
saved session whose requests all waited in a queue, so the doctor (reading it as `infertop
doctor` would) says batching=continuous."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from probe.common.atomic import write_json_atomic
from probe.contract.objective import parse_slo
from probe.contract.options import OptConfig
from probe.contract.session import Session
from probe.runs.spread import Spread
from probe.session_store.snapshot import snapshot_document
from probe.tune.combo import QUICK, run_combo
from probe.tune.doctor_seed import doctor_advice, doctor_seed
from probe.tune.runner import quick_seeds
from probe.tune.search import Measured
from probe.tune.space import dimensions
from probe.tune.trials import Bounds
from probe.tune.tuned_settings import Setup, TunedSettings
from tests.conftest import synthetic_record


def queued_session_file(path: Path) -> str:
    """20 requests arriving at once and served one at a time: the tail is queue wait."""
    session = Session()
    session.set_slo(parse_slo("latency=1s"))
    config = session.config_id(OptConfig())
    for i in range(20):
        record = synthetic_record(f"r{i}", i, latency_ms=100.0, config_id=config,
                                  start_s=i * 0.1)
        wait_ms = i * 100.0
        session.add_record(replace(record, arrival_s=0.0, queue_ms=wait_ms,
                                   latency_ms=100.0 + wait_ms, ttft_ms=record.ttft_ms + wait_ms))
    write_json_atomic(path, snapshot_document(session.freeze(), environment={}, model={},
                                              trace={}))
    return str(path)


def fake(tmp_path: Path):
    """The default's run leaves the queued session; every other config measures its
    goodput from a table (continuous batching pays)."""
    calls: list[Setup] = []

    def side(setup: Setup, sessions: tuple[str, ...] = ()) -> Measured:
        value = 2.0 if setup.options.batching == "continuous" else 1.0
        return Measured(Spread.of([value, value]), value, 1.0, 100 / value, None, sessions)

    def evaluate(setup, label, control):
        calls.append(setup)
        if control is None:
            return side(setup, (queued_session_file(tmp_path / "default.json"),))
        return replace(side(setup), control=side(control))
    return evaluate, calls


def test_the_doctors_next_step_on_the_defaults_run_is_the_first_trial(tmp_path):
    evaluate, calls = fake(tmp_path)
    dims = dimensions("cpu", ("compile", "bucketing", "batching"))
    state = run_combo(OptConfig(), evaluate, mode=QUICK, dims=dims, trials=3,
                      objectives=("goodput",), bounds=Bounds(),
                      seeds=lambda default, segment: quick_seeds(OptConfig(), default,
                                                                 segment, dims))
    first = state.trials[1]
    assert calls[1] == first.setup
    assert first.options == OptConfig(batching="continuous")
    assert first.settings == TunedSettings(max_batch=8)     # tune's slots where they act
    assert first.source.startswith("doctor's next step (batching=continuous): the tail "
                                   "waited in the queue")
    # then the greedy path's first config (compile=default, the seed order's first in space)
    assert state.trials[2].source.startswith("greedy path")
    assert state.trials[2].options.compile == "default"
    # it is saved with the trial, so tune.json says where each trial came from
    saved = json.loads(json.dumps(first.as_dict()))
    assert saved["source"] == first.source


def test_a_step_outside_the_space_or_a_session_without_one_seeds_nothing(tmp_path):
    path = queued_session_file(tmp_path / "default.json")
    advice = doctor_advice([path])
    assert advice is not None and dict(advice[0]) == {"batching": "continuous"}
    assert doctor_seed(OptConfig(), advice, dimensions("cpu", ("compile",))) == []
    assert doctor_advice([]) is None
    assert doctor_advice([str(tmp_path / "missing.json")]) is None
    assert doctor_seed(OptConfig(), ({"batching": "sideways"}, "?"),
                       dimensions("cpu", ("batching",))) == []
