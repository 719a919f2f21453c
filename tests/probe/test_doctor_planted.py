"""The doctor on real t5-tiny replays, each planting one cause: it must name that cause first (and
a healthy low-load session gets no advice). One replay per planted session (module-scoped), as
`infertop replay` serves it: the same workload, engine and serving loop, saved to a session JSON."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from infertop.cli import main
from infertop.commands.doctor import diagnosis_of
from probe.analysis.attribution import attribute
from probe.contract.options import parse_opts
from probe.engine.process.headless import document_for, engine_for, replay_loop
from probe.engine.process.replay_and_save import serve_and_save
from probe.engine.workload_setup import prepare_workload


def _replay(folder: Path, name: str, rows: list[tuple[int, int, int]], *, opts: tuple = (),
            buckets: str | None = None, backend: str = "inductor",
            concurrency: int | None = None) -> Path:
    """rows: (timestamp ms, input length, output length); `concurrency`: a closed loop with
    that many outstanding instead of the timestamps. Returns the saved session."""
    trace = folder / f"{name}.jsonl"
    trace.write_text("".join(json.dumps({"timestamp": t, "input_length": i, "output_length": o})
                             + "\n" for t, i, o in rows))
    workload = prepare_workload(str(trace), buckets=buckets, max_input=512, max_output=16)
    engine = engine_for(workload, model="t5-tiny", device="cpu", options=parse_opts(opts),
                        compile_backend=backend, threads=1)
    out = folder / f"{name}.json"
    try:
        serve_and_save(engine, replay_loop(engine, workload, concurrency=concurrency), out,
                       lambda: document_for(engine, workload, name))
    finally:
        engine.close()
    return out


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("planted")


@pytest.fixture(scope="module")
def burst(folder) -> Path:
    """Far above capacity: 24 requests within 24 ms, served one at a time."""
    return _replay(folder, "burst", [(i, 20, 8) for i in range(24)])


@pytest.fixture(scope="module")
def healthy(folder) -> Path:
    """Low load: one short request at a time, each arriving as the one before ends (a closed
    loop of one): nothing queues, however slow the machine's load makes a request. Arrivals
    1.5 s apart (0.3 s of service idle) would queue once load made a request take longer."""
    return _replay(folder, "healthy", [(1500 * i, 20, 8) for i in range(10)], concurrency=1)


@pytest.fixture(scope="module")
def padded(folder) -> Path:
    """Powers-of-two buckets with inputs just above an edge: 17-20 tokens run at 128."""
    return _replay(folder, "padded", [(1500 * i, 17 + i % 4, 8) for i in range(10)],
                   opts=("bucketing=on",), buckets="16,128,512", concurrency=1)


@pytest.fixture(scope="module")
def ladder(folder) -> Path:
    """Compiled, static shapes, no buckets: every request a new input length (dynamo traces
    each; the eager backend keeps the compile itself cheap)."""
    return _replay(folder, "ladder", [(1000 * i, 10 + 10 * i, 4) for i in range(6)],
                   opts=("compile=default", "decode=fullgraph", "dynamic=off"), backend="eager")


def _first(path: Path):
    data, report = diagnosis_of(str(path))
    (segment,) = report.segments
    return data, segment


def _shares_match_the_records(path: Path) -> None:
    data, segment = _first(path)
    again = attribute(data.records, data.events)
    assert sum(c.share for c in segment.tail.causes) == pytest.approx(1.0)
    for cause in segment.tail.causes:
        assert cause.share == pytest.approx(again.cause(cause.cause).share)


def test_a_burst_far_above_capacity_is_queueing(burst):
    _, segment = _first(burst)
    assert segment.tail.causes[0].cause == "queue"
    assert any(f.finding == "saturation" for f in segment.findings)
    assert segment.next_step is not None and segment.next_step.options == {"batching": "continuous"}
    _shares_match_the_records(burst)


def test_a_healthy_low_load_session_gets_no_advice(healthy):
    _, segment = _first(healthy)
    assert segment.tail.causes[0].cause in ("decode", "encode")
    assert segment.next_step is None
    assert "no change advised" in segment.verdict
    _shares_match_the_records(healthy)


def test_inputs_just_above_power_of_two_edges_are_padding(padded):
    _, segment = _first(padded)
    assert segment.tail.causes[0].cause == "padding"
    assert "ran at 128" in segment.tail.causes[0].evidence
    assert segment.next_step is not None and segment.next_step.options == {"bucketing": "off"}
    _shares_match_the_records(padded)


@pytest.mark.slow
def test_a_ladder_of_new_lengths_without_buckets_is_compile(ladder):
    _, segment = _first(ladder)
    top = segment.tail.causes[0]
    assert top.cause == "compile"
    assert "recompile" in top.evidence
    assert segment.next_step is not None and segment.next_step.options == {"bucketing": "on"}
    _shares_match_the_records(ladder)


def test_the_doctor_command_prints_the_json_shape(burst, capsys):
    assert main(["doctor", str(burst), "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert set(document) == {"segments", "checklist"}
    (segment,) = document["segments"]
    assert set(segment) == {"config_id", "tail", "findings", "verdict", "next_step",
                            "guard_groups"}
    assert set(segment["tail"]) == {"requests", "latency_p95_ms", "causes"}
    assert [set(c) for c in segment["tail"]["causes"]] == [
        {"cause", "share", "requests", "evidence"}] * 8
    assert set(segment["next_step"]) == {"options", "why", "predicted"}
    assert all(c["status"] in ("pass", "fail", "not yet") for c in document["checklist"])
    saved = json.loads(burst.read_text())
    assert saved["segments"][0]["diagnosis"]["tail"] == segment["tail"]
