"""`snapshot show` / `snapshot compare` on synthetic sessions written as real snapshot files."""

import re
from pathlib import Path

import numpy as np
import pytest

from infertop.cli import main
from probe.analysis.stats import session_segments
from probe.common.atomic import write_json_atomic
from probe.common.errors import BadInput
from probe.common.units import fmt_ms
from probe.contract.options import OptConfig
from probe.contract.records import CompileEvent, GraphBreakRecord
from probe.session_store.snapshot import snapshot_document
from probe.session_store.snapshot_report import compare, metric_rows, show

EAGER = OptConfig()
COMPILED = OptConfig(compile="default", decode="fullgraph")


def _write(path: Path, data) -> str:
    document = snapshot_document(
        data, environment={"device": "cpu", "device_name": "test", "torch": "x"},
        model={"name": "t5-tiny", "parameters": 1000, "dtype": "fp32"}, trace={"name": "chat"})
    return str(write_json_atomic(path, document))


def test_show_prints_one_row_per_config(tmp_path, make_session, make_record) -> None:
    latencies = [100.0, 200.0, 300.0, 400.0]
    records = [make_record(f"a{i}", i, latency_ms=v) for i, v in enumerate(latencies)]
    records += [make_record(f"b{i}", 10 + i, latency_ms=50.0, config_id="c2", kv_bytes=2048)
                for i in range(3)]
    events = [CompileEvent("0/0", "compile", "decode_step", 0.0, 2.0, None, "b0", "c2", 1),
              CompileEvent("0/1", "recompile", "decode_step", 1.0, 1.0, "size", "b1", "c2", 1)]
    breaks = [GraphBreakRecord("c1", "Unsupported Tensor.item() call", "x.py:3", 4)]
    path = _write(tmp_path / "s.json", make_session(
        records, options={"c1": EAGER, "c2": COMPILED}, events=events, breaks=breaks))
    text = show(path)
    lines = text.splitlines()
    row1 = next(line for line in lines if line.startswith("c1 "))
    row2 = next(line for line in lines if line.startswith("c2 "))
    # p50 recomputed another way: numpy's median of the four latencies
    assert fmt_ms(float(np.median(latencies))) in row1
    assert "c2: compile=default decode=fullgraph" in text
    header = re.split(r"\s{2,}", next(line for line in lines
                                      if line.startswith("config ")).strip())
    cells = re.split(r"\s{2,}", row2.strip())
    at = header.index("compiles")
    assert header[at + 1] == "recompiles" and cells[at:at + 2] == ["1", "1"]
    assert "3.00 s" in row2 and "2.00 KiB" in row2      # units as the dashboard shows them
    assert "×4 x.py:3" in text


def test_compare_gives_deltas_ratios_and_config_differences(tmp_path, make_session, make_record) -> None:
    a = _write(tmp_path / "a.json", make_session(
        [make_record(f"a{i}", i, latency_ms=200.0, start_s=0.2 * i) for i in range(4)], options={"c1": EAGER}))
    b = _write(tmp_path / "b.json", make_session(
        [make_record(f"b{i}", i, latency_ms=100.0, start_s=0.1 * i) for i in range(4)], options={"c1": COMPILED}))
    text = compare(a, b)
    assert "config differences: compile: off → default; decode: hf-generate → fullgraph" in text
    p50 = next(line for line in text.splitlines() if line.startswith("latency p50"))
    assert "200 ms" in p50 and "100 ms" in p50 and "−100 ms" in p50 and "0.50×" in p50
    assert p50.rstrip().endswith("B")               # lower latency: B is better
    tokens = next(line for line in text.splitlines() if line.startswith("tokens/s"))
    assert "2.00×" in tokens                        # back to back: twice the tokens/s


def test_compare_matches_configs_by_options_and_lists_the_rest(tmp_path, make_session, make_record) -> None:
    a = _write(tmp_path / "a.json", make_session(
        [make_record("x", 0, latency_ms=10.0), make_record("y", 1, latency_ms=10.0, config_id="c2")],
        options={"c1": EAGER, "c2": COMPILED}))
    b = _write(tmp_path / "b.json", make_session(
        [make_record("z", 0, latency_ms=20.0)], options={"c1": COMPILED}))
    # B has one config and A two: matched by options, A's eager config listed alone
    text = compare(a, b)
    assert "A c2 [compile=default decode=fullgraph]  vs  B c1" in text
    assert "only in A: c1 [baseline]" in text


def test_metric_rows_skip_metrics_neither_side_has(make_session, make_record) -> None:
    one = session_segments(make_session([make_record("x", 0, latency_ms=10.0, output_tokens=1)]))[0]
    names = [row[0] for row in metric_rows(one, one)]
    assert "tpot p50" not in names and "latency p50" in names


def test_cli_show_and_compare(tmp_path, make_session, make_record, capsys) -> None:
    path = _write(tmp_path / "a.json", make_session([make_record("x", 0, latency_ms=10.0)]))
    assert main(["snapshot", "show", path]) == 0
    assert "10 ms" in capsys.readouterr().out
    assert main(["snapshot", "compare", path, path]) == 0
    assert "config differences: none" in capsys.readouterr().out


def test_a_bad_file_is_a_config_error(tmp_path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    with pytest.raises(BadInput):
        show(str(bad))
    assert main(["snapshot", "show", str(bad)]) == 2


def test_show_and_compare_split_the_compile_time_where_the_session_has_it(
        tmp_path, make_session, make_record) -> None:
    def session(name: str, *phases: tuple[float, float, float, bool]) -> str:
        records = [make_record(f"{name}{i}", i, latency_ms=50.0) for i in range(2)]
        events = [CompileEvent(f"0/{n}", "compile" if n == 0 else "recompile", "decode_step",
                               float(n), tracing + aot + inductor, None, f"{name}0", "c1", 1,
                               tracing_s=tracing, aot_s=aot, inductor_s=inductor,
                               from_cache=cached)
                  for n, (tracing, aot, inductor, cached) in enumerate(phases)]
        return _write(tmp_path / f"{name}.json", make_session(records, events=events))

    built = session("a", (1.0, 0.5, 3.0, False), (1.0, 0.5, 3.0, False))
    loaded = session("b", (1.0, 0.25, 0.0, True))
    assert "compile split: tracing 2.00 s · aot 1.00 s · inductor 6.00 s" in show(built)
    assert "compile split: tracing 1.00 s · cache load 250 ms" in show(loaded)
    lines = compare(built, loaded).splitlines()
    rows = {re.split(r"\s{2,}", line.strip())[0]: line for line in lines
            if line.startswith("  of it")}
    assert "2.00 s" in rows["of it tracing"] and "0.50×" in rows["of it tracing"]
    assert "6.00 s" in rows["of it inductor"] and rows["of it inductor"].rstrip().endswith("B")
    assert "250 ms" in rows["of it cache load"]
    unsplit = session("c")
    assert "compile split" not in show(unsplit)
    assert "of it" not in compare(unsplit, unsplit)
