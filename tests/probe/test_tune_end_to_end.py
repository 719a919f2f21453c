"""`infertop tune` on t5-tiny with a small budget: a planted bad baseline (no KV cache, made
slow beyond any load by a sleep a token) must be fixed, and the files a user reads must agree
with the saved sessions. No assertion rests on a measured speed."""

from __future__ import annotations

import json
import threading
import time

import numpy as np
import pytest

from probe.analysis.slo import goodput
from probe.session_store.snapshot import read_document, session_data

OUTPUT = 16
# The planted cost of the missing KV cache: every token generated without it waits this long
# as well (a sleep in the decode, where recomputing the prefix is). Measured service times
# cannot tell the two configs apart on a loaded machine (at 384 tokens the uncached/cached
# ratio read 1.9 idle but 1.15 under load); a sleep only gets longer under load, so the
# uncached config cannot be fast: OUTPUT tokens take at least OUTPUT × PLANTED_S.
PLANTED_S = 0.2
# A latency bound the uncached config cannot meet (its sleeps alone pass it) and the cached
# one meets with room: 16 eager t5-tiny steps take well under 0.1 s idle, so the cached config
# keeps meeting it at 30× that. (At 0.06 s a token, with load average 23 on the 2 cores and
# two `yes` besides, the capacity search found no rate at which the cached config met it.)
SLO = f"latency={900 * OUTPUT * PLANTED_S:.0f}ms"
RATE = 0.5      # the cached config keeps up with it; the uncached one queues besides
# The planted tests replay 2 requests a run: enough for a rate (one gap), a queue behind the
# uncached first one and the capacity search's "alone"; each uncached one sleeps OUTPUT ×
# PLANTED_S, in every run of two searches, so a third would only add waiting.


@pytest.fixture
def planted_missing_kv_cache(monkeypatch):
    """kv_cache=off made slow beyond any load: each token of an uncached generate() sleeps
    PLANTED_S first (HF generate's streamer hears every token as it is made). Not in a run's
    warm-up rehearsal (Engine.rehearse), which records nothing a figure reads: the sleeps
    there would only add two requests' worth of waiting to every uncached run."""
    from probe.engine.decode import hf_generate
    from probe.engine.engine import Engine

    real = hf_generate.generate
    real_rehearse = Engine.rehearse
    rehearsing = threading.Event()

    def rehearse(self, requests):
        rehearsing.set()
        try:
            return real_rehearse(self, requests)
        finally:
            rehearsing.clear()
    monkeypatch.setattr(Engine, "rehearse", rehearse)

    def generate(generate_fn, model, input_ids, attention_mask, new_tokens, use_cache,
                 stops=frozenset()):
        if use_cache or rehearsing.is_set():
            return real(generate_fn, model, input_ids, attention_mask, new_tokens, use_cache,
                        stops)

        def slow(**kwargs):
            streamer = kwargs["streamer"]
            put = streamer.put

            def put_late(value):
                time.sleep(PLANTED_S)
                put(value)
            streamer.put = put_late
            return generate_fn(**kwargs)
        return real(slow, model, input_ids, attention_mask, new_tokens, use_cache, stops)
    monkeypatch.setattr(hf_generate, "generate", generate)


def long_outputs(folder, count: int):
    trace = folder / "long.jsonl"
    trace.write_text("".join(json.dumps({"timestamp": i * 400, "input_length": 24,
                                         "output_length": OUTPUT}) + "\n" for i in range(count)))
    return trace


@pytest.mark.slow
def test_tune_fixes_a_planted_missing_kv_cache(tmp_path, planted_missing_kv_cache):
    from infertop.cli import main
    trace = long_outputs(tmp_path, 12)
    out = tmp_path / "tune"
    slo, rate = SLO, RATE
    code = main(["tune", "--model", "t5-tiny", "--trace", str(trace), "--device", "cpu",
                 "--slo", slo, "--rate", f"{rate:.4g}", "--requests", "2", "--repeats", "2",
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
def test_tune_by_capacity_brackets_each_config_and_keeps_the_kv_cache(
        tmp_path, planted_missing_kv_cache):
    from infertop.cli import main
    trace = long_outputs(tmp_path, 8)
    out = tmp_path / "tune"
    slo = SLO
    code = main(["tune", "--model", "t5-tiny", "--trace", str(trace), "--device", "cpu",
                 "--slo", slo, "--find-capacity", "--slo-target", "0.6",
                 "--requests", "2", "--threads", "1", "--budget", "0.01",
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
