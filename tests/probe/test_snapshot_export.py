"""A session exported as CSV or Parquet reads back in pandas equal to its JSON."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from probe.common.atomic import write_json_atomic
from probe.engine.process.headless import document_for
from probe.engine.workload_setup import prepare_workload
from probe.session_store.snapshot_export import export
from tests.conftest import serve

NUMERIC = ("latency_ms", "ttft_ms", "tpot_ms", "queue_ms", "kv_cache_bytes", "start_s", "end_s")


@pytest.fixture
def saved(make_engine, tmp_path):
    engine = make_engine("decode=fullgraph")
    serve(engine, [(5 + i, 2 + i % 3) for i in range(9)])
    engine.compute_references()
    path = tmp_path / "run.json"
    write_json_atomic(path, document_for(engine, prepare_workload("chat"), "chat"))
    return path


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_export_reads_back_equal_to_the_json(saved, tmp_path, fmt):
    requests_path, segments_path = export(saved, tmp_path / "out", fmt)
    read = pd.read_csv if fmt == "csv" else pd.read_parquet
    requests, segments = read(requests_path), read(segments_path)
    document = json.loads(saved.read_text())
    assert list(requests["id"]) == [r["id"] for r in document["requests"]]
    for column in NUMERIC:
        expected = np.array([np.nan if r[column] is None else r[column]
                             for r in document["requests"]], dtype=float)
        np.testing.assert_allclose(requests[column].to_numpy(dtype=float), expected)
    kept = [r for r in document["requests"] if "tokens" in r]
    assert kept
    for row in kept:
        exported = requests.loc[requests["id"] == row["id"], "tokens"].iloc[0]
        tokens = ([int(t) for t in exported.split()] if fmt == "csv" else list(exported))
        assert tokens == row["tokens"]
    segment = document["segments"][0]
    assert segments.loc[0, "latency_ms.p95"] == pytest.approx(segment["latency_ms"]["p95"])
    assert segments.loc[0, "throughput_rps"] == pytest.approx(segment["throughput_rps"])


def test_export_refuses_an_output_folder_before_writing(saved, tmp_path):
    from probe.common.errors import TraceError
    (tmp_path / "out.requests.csv").mkdir()
    with pytest.raises(TraceError):
        export(saved, tmp_path / "out", "csv")
    assert not (tmp_path / "out.segments.csv").exists()


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_an_eager_config_then_a_compiled_one_export_every_figure(make_engine, tmp_path, fmt):
    """The usual dashboard session: c1 eager (no compile split), then c2 compiled. Each
    segment's figures land in the same columns, the ones a segment lacks empty."""
    engine = make_engine("decode=fullgraph")
    serve(engine, [(5 + i, 2) for i in range(3)])
    engine.set_options(engine.options.with_option("compile", "default"))
    serve(engine, [(5 + i, 2) for i in range(3)], start_seq=3)
    path = tmp_path / "run.json"
    write_json_atomic(path, document_for(engine, prepare_workload("chat"), "chat"))
    segments = (pd.read_csv if fmt == "csv" else pd.read_parquet)(
        export(path, tmp_path / "out", fmt)[1])
    document = json.loads(path.read_text())
    assert [s["compile_phases"] is None for s in document["segments"]] == [True, False]
    assert list(segments["config_id"]) == ["c1", "c2"]
    assert "compile_phases" not in segments.columns
    phases = document["segments"][1]["compile_phases"]
    for part, seconds in phases.items():
        assert np.isnan(segments.loc[0, f"compile_phases.{part}"])
        assert segments.loc[1, f"compile_phases.{part}"] == pytest.approx(seconds)
    assert segments.loc[1, "compile_s"] == pytest.approx(document["segments"][1]["compile_s"])


@given(st.lists(st.fixed_dictionaries({
    "requests": st.integers(0, 9),
    "drift": st.none() | st.fixed_dictionaries({"token_agreement": st.floats(0, 1)}),
    "compile_phases": st.none() | st.fixed_dictionaries({"tracing_s": st.floats(0, 60),
                                                         "aot_s": st.floats(0, 60)}),
}), min_size=1, max_size=5))
def test_segment_rows_share_their_columns_and_keep_every_value(segments):
    from probe.session_store.snapshot_export import _flatten, _same_columns
    flat = [_flatten(segment) for segment in segments]
    rows = _same_columns(flat)
    assert len({tuple(row) for row in rows}) == 1                  # one header for all rows
    for before, after in zip(flat, rows, strict=True):
        assert {k: v for k, v in before.items() if v is not None} == {
            k: v for k, v in after.items() if v is not None}       # nothing lost or invented
    for name in ("drift", "compile_phases"):                        # a bare column only when
        nested = any(segment[name] is not None for segment in segments)   # no row has parts
        assert (name in rows[0]) == (not nested)
