"""`infertop tune` on t5-tiny with a small budget: a planted bad baseline (no KV cache, long
outputs) must be fixed, and the files a user reads must agree with the saved sessions."""

from __future__ import annotations

import json

import numpy as np
import pytest

from probe.analysis.slo import goodput
from probe.session_store.snapshot import read_document, session_data

# Long enough that recomputing the prefix dominates t5-tiny's per-step overhead even on a
# loaded machine: at 256 tokens the uncached/cached ratio read 1.9 idle but 1.15 under load.
OUTPUT = 384


def service_ms() -> tuple[float, float]:
    """Warm requests of the test's shape on this machine, now, KV-cached and uncached taking
    turns (so a burst of load falls on both), the fastest of each: the SLO is set between the
    two configs' service times, so the test holds however loaded the shared machine is."""
    import torch

    from probe.contract.options import OptConfig
    from probe.engine.engine import Engine, EngineSettings
    from probe.engine.model.requests import EngineRequest
    torch.set_num_threads(1)
    engines = [Engine(EngineSettings(model="t5-tiny", device="cpu", max_new_tokens=OUTPUT),
                      OptConfig(kv_cache=kv_cache)) for kv_cache in ("on", "off")]
    times: list[list[float]] = [[], []]
    try:
        for i in range(4):
            for engine, measured in zip(engines, times):
                request = EngineRequest(f"c{i}", i, 24, OUTPUT, engine.clock.now_s())
                measured.append(engine.serve([request])[0].latency_ms)
    finally:
        for engine in engines:
            engine.close()
    on, off = (min(measured[1:]) for measured in times)   # the first: a cold start
    return on, off


def between() -> tuple[str, float]:
    """A latency bound the uncached config misses even unqueued (0.8 of its fastest service
    time) and the cached one meets with room for a loaded minute, and a rate between the two
    configs' capacities: the cached config keeps up, the uncached one queues."""
    on, off = service_ms()
    assert off > 1.3 * on, (on, off)           # recomputing the prefix costs more
    return f"latency={0.8 * off:.0f}ms", 1000.0 / (on * off) ** 0.5


def long_outputs(folder, count: int):
    trace = folder / "long.jsonl"
    trace.write_text("".join(json.dumps({"timestamp": i * 400, "input_length": 24,
                                         "output_length": OUTPUT}) + "\n" for i in range(count)))
    return trace


@pytest.mark.slow
def test_tune_fixes_a_planted_missing_kv_cache(tmp_path):
    from infertop.cli import main
    trace = long_outputs(tmp_path, 12)
    out = tmp_path / "tune"
    slo, rate = between()
    code = main(["tune", "--model", "t5-tiny", "--trace", str(trace), "--device", "cpu",
                 "--slo", slo, "--rate", f"{rate:.4g}", "--requests", "3", "--repeats", "2",
                 "--threads", "1", "--budget", "0.01", "--opt", "kv_cache=off",
                 "--compile-backend", "eager", "--out", str(out)])
    assert code == 0
    document = json.loads((out / "tune.json").read_text())
    steps = {s["change"]: s for s in document["steps"]}
    assert steps["kv_cache=on"]["kept"], steps["kv_cache=on"]["why"]
    assert document["final"]["options"]["kv_cache"] == "on"
    assert "--opt kv_cache=off" not in document["final"]["opt_line"]
    assert steps["kv_cache=on"]["goodput_rps"] > steps["baseline"]["goodput_rps"]
    # each step's figures are its saved sessions' own, recomputed from their records
    for step in document["steps"]:
        sessions = (step["measured"] or {}).get("sessions", [])
        values = []
        for path in sessions:
            data = session_data(read_document(path))
            assert data.slo is not None and data.slo.text() == slo
            values.append(goodput(data.records, data.slo).goodput_rps)
            arrivals = sorted(r.arrival_s for r in data.records)
            # offered at --rate: the replayed requests' own mean arrival rate
            assert (len(arrivals) - 1) / (arrivals[-1] - arrivals[0]) == pytest.approx(
                float(f"{rate:.4g}"))
        if sessions:
            assert float(np.median(values)) == pytest.approx(step["measured"]["figure"]["median"])
    assert "kv_cache=on" in (out / "tune.md").read_text()


@pytest.mark.slow
def test_tune_by_capacity_brackets_each_config_and_keeps_the_kv_cache(tmp_path):
    from infertop.cli import main
    trace = long_outputs(tmp_path, 8)
    out = tmp_path / "tune"
    on, off = service_ms()
    assert off > 1.3 * on, (on, off)
    # closer to the uncached time than `between`: a capacity search replays many times, and
    # the cached config must meet the bound however the shared machine's load moves meanwhile
    slo = f"latency={0.8 * off:.0f}ms"
    code = main(["tune", "--model", "t5-tiny", "--trace", str(trace), "--device", "cpu",
                 "--slo", slo, "--find-capacity", "--slo-target", "0.6",
                 "--requests", "3", "--threads", "1", "--budget", "0.01",
                 "--opt", "kv_cache=off", "--compile-backend", "eager", "--out", str(out)])
    assert code == 0
    document = json.loads((out / "tune.json").read_text())
    steps = {s["change"]: s for s in document["steps"]}
    for step in (steps["baseline"], steps["kv_cache=on"]):
        search = step["measured"]["capacity"]
        low, high = search["bracket_rps"]
        for run in search["runs"]:          # the bracket agrees with every run behind it
            if low is not None and run["rate_rps"] <= low:
                assert run["slo_attainment"] >= 0.6
            if high is not None and run["rate_rps"] >= high:
                assert run["slo_attainment"] < 0.6
    base = steps["baseline"]["measured"]["capacity"]["capacity_rps"] or 0.0
    fixed = steps["kv_cache=on"]["measured"]["capacity"]["capacity_rps"]
    assert fixed is not None and fixed > base, steps["kv_cache=on"]["why"]
    assert document["final"]["options"]["kv_cache"] == "on", steps["kv_cache=on"]["why"]


@pytest.mark.slow
def test_tune_quick_search_keeps_every_trial_and_resumes_only_the_rest(tmp_path):
    """`--search quick --trials 2` over eager options on short outputs (no compile: seconds
    a run), then `--resume` after its last trial is dropped from tune.json: only that one is
    measured again, and every trial's goodput is its saved sessions' own."""
    from infertop.cli import main
    trace = tmp_path / "short.jsonl"
    trace.write_text("".join(json.dumps({"timestamp": i * 300, "input_length": 16,
                                         "output_length": 8}) + "\n" for i in range(6)))
    out = tmp_path / "tune"
    code = main(["tune", "--model", "t5-tiny", "--trace", str(trace), "--device", "cpu",
                 "--slo", "latency=5s", "--rate", "2", "--requests", "3", "--repeats", "1",
                 "--threads", "1", "--search", "quick", "--trials", "2",
                 "--space", "kv_cache,bucketing,qkv", "--out", str(out)])
    assert code == 0
    document = json.loads((out / "tune.json").read_text())
    trials = document["trials"]
    assert len(trials) == 3 and all(t["status"] == "done" for t in trials), trials
    assert trials[0]["control"] is None and all(t["control"] for t in trials[1:])
    for trial in trials:
        sessions = trial["measured"]["sessions"]
        values = [goodput(d.records, d.slo).goodput_rps
                  for d in (session_data(read_document(p)) for p in sessions)]
        assert float(np.median(values)) == pytest.approx(trial["goodput_rps"])
    assert document["final"] is not None and document["frontier"]
    document["trials"] = trials[:2]
    (out / "tune.json").write_text(json.dumps(document))
    runs_before = len(list((out / "runs").iterdir()))
    assert main(["tune", "--resume", str(out)]) == 0
    again = json.loads((out / "tune.json").read_text())
    assert [t["options"] for t in again["trials"][:2]] == [t["options"] for t in trials[:2]]
    assert len(again["trials"]) == 3
    assert len(list((out / "runs").iterdir())) == runs_before + 2   # one trial, two sides
