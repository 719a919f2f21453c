"""`infertop snapshot import`: each peer's result file (tests/fixtures/peers/, see its README)
read as a session that `snapshot show`, `compare` and the doctor read; a damaged copy is one
BadInput line or a valid session, never a traceback."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from probe.analysis.diagnosis import context_from_document
from probe.analysis.session_diagnosis import diagnose_session
from probe.common.errors import BadInput, TraceError
from probe.session_store.peer_imports import import_peer_file, read_peer_file
from probe.session_store.snapshot import read_document, saved_session
from probe.session_store.snapshot_report import compare, show
from tools.peer_agreement import agreement

FIXTURES = Path(__file__).parent.parent / "fixtures" / "peers"
FUZZ = settings(max_examples=40, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture,
                                       HealthCheck.too_slow])
# (fixture, tool, per-request, requests, failed)
CASES = [
    ("vllm_bench_detailed.json", "vLLM bench serve", True, 4, 1),
    ("vllm_bench_summary.json", "vLLM bench serve", False, 0, 0),
    ("inference_perf/per_request_lifecycle_metrics.json", "inference-perf", True, 6, 1),
]
CASES += [(name, tool, True, None, None) for name, tool in (
    ("aiperf/profile_export.jsonl", "AIPerf"), ("guidellm/benchmarks.json", "guidellm"),
    ("vllm/vllm_bench_result.json", "vLLM bench serve"))
    if (FIXTURES / name).exists()]


def _imported(tmp_path: Path, name: str) -> tuple[dict[str, Any], Path]:
    out, peer = import_peer_file(FIXTURES / name, tmp_path / "s.json")
    return read_document(out), out


@pytest.mark.parametrize("name, tool, per_request, requests, failed", CASES)
def test_each_file_imports_as_a_session_the_readers_read(tmp_path, name, tool, per_request,
                                                         requests, failed) -> None:
    document, out = _imported(tmp_path, name)
    data = saved_session(document)
    assert document["imported"]["tool"] == tool
    assert document["imported"]["per_request"] is per_request
    assert {"latency_ms", "ttft_ms", "tpot_ms"} <= set(document["imported"]["figures"])
    if requests is not None:
        assert len(data.records) == requests
        assert sum(not r.ok for r in data.records) == failed
    assert per_request == bool(data.records)
    text = show(str(out))
    assert f"imported from {tool}" in text and "what the imported figures are" in text
    diagnose_session(data, context_from_document(document, (None, None)))
    assert "compared:" in compare(str(out), str(out))


def test_vllm_detailed_keeps_each_request_in_ms_on_one_clock(tmp_path) -> None:
    raw = json.loads((FIXTURES / "vllm_bench_detailed.json").read_text())
    document, _ = _imported(tmp_path, "vllm_bench_detailed.json")
    records = saved_session(document).records
    first = records[0]
    assert first.latency_ms == pytest.approx(raw["latencies"][0] * 1e3)
    assert first.ttft_ms == pytest.approx(raw["ttfts"][0] * 1e3)
    # vLLM's TPOT: (latency − TTFT) / (output tokens − 1)
    assert first.tpot_ms == pytest.approx((raw["latencies"][0] - raw["ttfts"][0]) * 1e3
                                          / (raw["output_lens"][0] - 1))
    assert [r.arrival_s for r in records] == pytest.approx(
        [s - raw["start_times"][0] for s in raw["start_times"]])
    failed = records[2]
    assert not failed.ok and failed.ttft_ms is None
    names = {f["name"] for f in document["imported"]["runs"]["c1"]["summary"]}
    assert {"p99_tpot_ms", "median_itl_ms", "duration"} <= names


def test_a_real_vllm_file_keeps_the_order_vllm_sent_its_request_ids_in(tmp_path) -> None:
    """vLLM 0.34 sends X-Request-Id PREFIX-i and saves no id: its i-th request is the i-th
    entry, so it joins the server's record by index."""
    records = saved_session(_imported(tmp_path, "vllm/vllm_bench_result.json")[0]).records
    served = {r["id"].rsplit("-", 1)[1]: r
              for r in read_document(FIXTURES / "vllm" / "served-vllm.json")["requests"]}
    assert [r.id for r in records] == [f"vllm-{i}" for i in range(len(served))]
    for index, record in enumerate(records):
        server = served[str(index)]
        assert record.input_tokens == server["input_tokens"]
        assert record.latency_ms >= server["latency_ms"]
        assert record.ttft_ms is not None and record.ttft_ms >= server["ttft_ms"]


def test_inference_perf_figures_are_the_ones_it_computed_itself(tmp_path) -> None:
    """The fixture was written with per_request_fields.computed_metrics on: each figure read
    from the raw times equals inference-perf's own for the same request."""
    name = "inference_perf/per_request_lifecycle_metrics.json"
    raw = json.loads((FIXTURES / name).read_text())
    records = saved_session(_imported(tmp_path, name)[0]).records
    assert len(records) == len(raw)
    for record, entry in zip(records, raw):
        assert record.latency_ms == pytest.approx((entry["end_time"] - entry["start_time"]) * 1e3)
        computed = entry.get("computed_metrics")
        if computed is None:
            assert not record.ok and "HTTP Error 400" in (record.error or "")
            continue
        for figure, theirs in ((record.ttft_ms, computed["time_to_first_token"]),
                               (record.tpot_ms, computed["time_per_output_token"]),
                               (record.latency_ms, computed["request_latency"])):
            assert figure == (None if theirs is None else pytest.approx(theirs * 1e3))
        assert record.input_tokens == computed["input_tokens"]
        assert record.output_tokens == computed["output_tokens"]


def test_inference_perf_joins_the_server_by_the_id_in_its_saved_reply(tmp_path) -> None:
    """inference-perf keeps no request id, but saves the raw reply, whose `id` is the one
    `infertop serve` gave the request: every request served joins, each client figure
    brackets the server's, and the refused one is the client's alone."""
    name = "inference_perf/per_request_lifecycle_metrics.json"
    records = saved_session(_imported(tmp_path, name)[0]).records
    served_document = read_document(FIXTURES / "inference_perf" / "served-inference-perf.json")
    served = {r["id"]: r for r in served_document["requests"]}
    joined = [(r, served[r.id]) for r in records if r.id in served]
    assert [r.id for r in records if r.id not in served] == ["inference-perf-4"]
    assert len(joined) == 5 and all(r.ok for r, _ in joined)
    for record, server in joined:
        assert record.input_tokens == server["input_tokens"]
        assert record.latency_ms >= server["latency_ms"]
        assert record.ttft_ms is None or record.ttft_ms >= server["ttft_ms"]
    joined_by_check = agreement(read_peer_file(FIXTURES / name),
                                saved_session(served_document).records)
    assert joined_by_check.joined == 5 and joined_by_check.holds
    assert joined_by_check.client_only == ("inference-perf-4",)
    assert len(joined_by_check.e2e.values) == 5


@pytest.mark.parametrize("text, problem", [
    ("", "not valid JSON"),
    ("{}", "not a result file infertop can import"),
    ("[1, 2]", "not a result file infertop can import"),
    ('{"benchmarks": [], "metadata": {}}', "holds no benchmark"),
    ('{"duration": null, "completed": null, "backend": "openai"}', "no run-level figure"),
    ('[{"start_time": 2, "end_time": 1, "info": {}}]', "end_time"),
])
def test_what_it_cannot_read_is_one_line(tmp_path, text, problem) -> None:
    source = tmp_path / "in.json"
    source.write_text(text)
    with pytest.raises(BadInput, match=problem) as refused:
        import_peer_file(source, tmp_path / "s.json")
    assert "\n" not in str(refused.value) and str(source) in str(refused.value)
    assert not (tmp_path / "s.json").exists()


def test_the_output_may_not_overwrite_the_input(tmp_path) -> None:
    source = tmp_path / "r.json"
    shutil.copy(FIXTURES / "vllm_bench_detailed.json", source)
    with pytest.raises((BadInput, TraceError)):
        import_peer_file(source, source)
    assert source.read_bytes() == (FIXTURES / "vllm_bench_detailed.json").read_bytes()


JSON_VALUES = st.one_of(st.none(), st.booleans(), st.integers(-10**20, 10**20),
                        st.floats(allow_nan=True), st.text(max_size=8), st.just("\ud800"),
                        st.just([]), st.just({}))


def _paths(value: Any, here: tuple = ()) -> list[tuple]:
    found = [here]
    if isinstance(value, dict):
        for key, inner in value.items():
            found += _paths(inner, here + (key,))
    elif isinstance(value, list):
        for index, inner in enumerate(value[:3]):
            found += _paths(inner, here + (index,))
    return found


def _damaged(document: Any, path: tuple, how: str, value: Any) -> Any:
    if not path:
        return value
    parent = document
    for step in path[:-1]:
        parent = parent[step]
    if how == "delete":
        del parent[path[-1]]
    else:
        parent[path[-1]] = value
    return document


def _one_line_or_valid(source: Path, tmp_path: Path) -> None:
    out = tmp_path / "s.json"
    out.unlink(missing_ok=True)
    try:
        written, _ = import_peer_file(source, out)
    except BadInput as exc:     # TraceError is no BadInput: it must not escape either
        assert "\n" not in str(exc)
        assert not out.exists()
        return
    show(str(written))          # a valid load is a session every reader reads


FILES = [case[0] for case in CASES]


@FUZZ
@given(name=st.sampled_from(FILES), data=st.data(), how=st.sampled_from(["set", "delete"]),
       value=JSON_VALUES)
def test_a_damaged_value_is_one_line_or_a_valid_session(tmp_path, name, data, how,
                                                        value) -> None:
    lines = (FIXTURES / name).read_text().splitlines()
    if name.endswith(".jsonl"):
        at = data.draw(st.integers(0, len(lines) - 1))
        document = json.loads(lines[at])
    else:
        at, document = None, json.loads("\n".join(lines))
    path = data.draw(st.sampled_from(_paths(document)))
    damaged = _damaged(document, path, how if path else "set", value)
    text = json.dumps(damaged)
    if at is not None:
        lines[at] = text
        text = "\n".join(lines)
    source = tmp_path / Path(name).name
    source.write_text(text)
    _one_line_or_valid(source, tmp_path)


@FUZZ
@given(name=st.sampled_from(FILES), cut=st.floats(0, 1), junk=st.binary(max_size=6))
def test_a_cut_or_soiled_file_is_one_line_or_a_valid_session(tmp_path, name, cut,
                                                             junk) -> None:
    raw = (FIXTURES / name).read_bytes()
    at = int(len(raw) * cut)
    source = tmp_path / Path(name).name
    source.write_bytes(raw[:at] + junk)
    _one_line_or_valid(source, tmp_path)


def test_every_reader_is_reached_by_its_shape_not_its_name(tmp_path) -> None:
    for name, tool, *_ in CASES:
        renamed = tmp_path / "results.txt"
        shutil.copy(FIXTURES / name, renamed)
        assert read_peer_file(renamed).tool == tool
