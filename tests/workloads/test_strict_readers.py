"""Readers refuse what they used to accept silently: a CSV column given twice, a JSON number
written as a string, import flags that do not apply to the format or the fit, a snapshot whose
records contradict its own configs. Each is one line naming file:line or the field, exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from infertop.cli import main
from probe.common.errors import TraceError
from tests.probe.test_snapshot_reading import valid_document
from workloads.reader import read_native


def one_error_line(capsys) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("infertop: error: "), err
    return err


def test_a_csv_column_given_twice_is_refused_naming_both(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text("timestamp,input_length,output_length,timestamp\n0,5,5,9\n")
    with pytest.raises(TraceError, match=r"t.csv:1: column 'timestamp' appears twice "
                                         r"\(columns 1 and 4\)"):
        read_native(path)


def test_trailing_empty_csv_columns_are_not_duplicates(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text("timestamp,input_length,output_length,,\n0,5,5,,\n")
    assert len(read_native(path)[0].requests) == 1


@pytest.mark.parametrize("field", ["timestamp", "input_length", "output_length"])
def test_a_json_number_written_as_a_string_is_refused(tmp_path: Path, field: str) -> None:
    row = {"timestamp": 0, "input_length": 5, "output_length": 5, field: "0"}
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps({"timestamp": 0, "input_length": 5, "output_length": 5}) + "\n"
                    + json.dumps(row) + "\n")
    with pytest.raises(TraceError, match=rf"t.jsonl:2: field '{field}': expected a JSON number, got "
                                         rf"the string '0'"):
        read_native(path)
    trace, report = read_native(path, skip_bad=True)   # a row error: --skip-bad skips it
    assert len(trace.requests) == 1 and report.skipped == (("malformed row", 1),)


@pytest.fixture
def azure(tmp_path: Path) -> Path:
    path = tmp_path / "azure.csv"
    path.write_text("TIMESTAMP,ContextTokens,GeneratedTokens\n"
                    "2023-11-16 18:15:46.6805900,374,44\n2023-11-16 18:15:50.9951690,396,109\n")
    return path


@pytest.mark.parametrize("flags, said", [
    (["--rate", "2"], "--rate does not apply to --format azure (only to sharegpt)"),
    (["--seed", "3"], "--seed does not apply to --format azure (only to sharegpt)"),
    (["--scale-quantile", "0.9"], "--scale-quantile applies only with --fit scale (this "
                                  "import uses --fit clip)"),
])
def test_import_flags_that_do_not_apply_are_refused(azure: Path, tmp_path: Path, capsys,
                                                    flags: list[str], said: str) -> None:
    out = tmp_path / "o.jsonl"
    assert main(["trace", "import", str(azure), "--format", "azure", "-o", str(out),
                 *flags]) == 2
    assert said in one_error_line(capsys) and not out.exists()


def test_the_flags_that_apply_still_import(azure: Path, tmp_path: Path) -> None:
    out = tmp_path / "o.jsonl"
    assert main(["trace", "import", str(azure), "--format", "azure", "-o", str(out),
                 "--sort", "--fit", "scale", "--scale-quantile", "0.9"]) == 0
    assert len(out.read_text().splitlines()) == 2


def _snapshot(tmp_path: Path, change) -> Path:
    document = valid_document()
    change(document)
    path = tmp_path / "s.json"
    path.write_text(json.dumps(document))
    return path


@pytest.mark.parametrize("change, said", [
    (lambda d: d["requests"][1].update(config_id="c9"),
     "requests[1].config_id 'c9' is not one of the session's configs (c1)"),
    (lambda d: d["compile_events"][0].update(config_id="zz"),
     "compile_events[0].config_id 'zz' is not one of the session's configs"),
    (lambda d: d["requests"][0].update(output_tokens=-5),
     "requests[0].output_tokens: expected a count >= 0, got -5"),
    (lambda d: d["requests"][1].update(kv_cache_bytes=-1),
     "requests[1].kv_cache_bytes: expected a count >= 0, got -1"),
    (lambda d: d["graph_breaks"][0].update(count=-2),
     "graph_breaks[0].count: expected a count >= 0, got -2"),
])
@pytest.mark.parametrize("command", ["show", "compare", "export"])
def test_a_snapshot_contradicting_itself_is_refused(tmp_path: Path, capsys, change, said: str,
                                                    command: str) -> None:
    path = _snapshot(tmp_path, change)
    argv = {"show": ["snapshot", "show", str(path)],
            "compare": ["snapshot", "compare", str(path), str(path)],
            "export": ["snapshot", "export", str(path), "--csv", "-o", str(tmp_path / "x")]}
    assert main(argv[command]) == 2
    assert said in one_error_line(capsys)
    assert not list(tmp_path.glob("x.*"))


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(field=st.sampled_from(["input_tokens", "padded_tokens", "output_tokens", "seq",
                              "kv_cache_used_bytes"]),
       value=st.integers(max_value=-1, min_value=-2 ** 53))
def test_any_negative_count_is_named(tmp_path: Path, capsys, field: str, value: int) -> None:
    path = _snapshot(tmp_path, lambda d: d["requests"][0].update({field: value}))
    assert main(["snapshot", "show", str(path)]) == 2
    assert f"requests[0].{field}: expected a count >= 0, got {value}" in one_error_line(capsys)
