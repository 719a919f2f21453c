import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from workloads.trace import load_trace

REPO = Path(__file__).resolve().parents[2]


def test_generate_then_stats(tmp_path: Path, cli, capsys) -> None:
    out = tmp_path / "chat.jsonl"
    assert cli("generate", "--profile", "chat", "-n", "300", "--seed", "0", "--rate", "2.0", "-o", str(out)) == 0
    assert "wrote 300 requests (2 rps, seed 0" in capsys.readouterr().out
    assert len(load_trace(out)) == 300
    assert cli("stats", str(out), "--json", "--buckets", "3") == 0
    stats = json.loads(capsys.readouterr().out)
    assert stats["requests"] == 300 and len(stats["buckets"]) == 3
    assert cli("stats", "chat") == 0
    text = capsys.readouterr().out
    assert "best 4 buckets" in text and "powers of two" in text and "burstiness" in text


def test_import_reports_fitting_in_numbers(tmp_path: Path, write_csv, cli, capsys) -> None:
    source = write_csv("azure.csv", ["TIMESTAMP", "ContextTokens", "GeneratedTokens"], [
        ["2023-11-16 18:17:03.9799600", 100, 20],
        ["2023-11-16 18:17:04.0000000", 4000, 900],
        ["2023-11-16 18:17:05.5000000", 600, 30],
    ])
    out = tmp_path / "out.jsonl"
    assert cli("import", "--format", "azure", str(source), "-o", str(out)) == 0
    printed = capsys.readouterr().out
    assert "read 3 rows" in printed
    assert "inputs: 2 of 3 clipped" in printed and "outputs: 1 of 3 clipped" in printed
    trace = load_trace(out)
    assert trace.input_lengths() == [100, 512, 512] and trace.output_lengths() == [20, 512, 30]
    assert trace.timestamps_ms()[1] == pytest.approx(20.04)


def test_malformed_input_exits_2_and_leaves_no_output(tmp_path: Path, cli, capsys) -> None:
    source = tmp_path / "m.jsonl"
    source.write_text('{"timestamp": 0, "input_length": 5, "output_length": 5, "hash_ids": []}\n'
                      '{"timestamp": 1, "input_length": "x", "output_length": 5, "hash_ids": []}\n')
    out = tmp_path / "out.jsonl"
    assert cli("import", "--format", "mooncake", str(source), "-o", str(out)) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"infertop: error: {source}:2: field 'input_length'")
    assert err.count("\n") == 1
    assert sorted(os.listdir(tmp_path)) == ["m.jsonl"]  # no output, no temporary file


def test_skip_bad_counts_in_the_summary(tmp_path: Path, cli, capsys) -> None:
    source = tmp_path / "m.jsonl"
    source.write_text('{"timestamp": 0, "input_length": 5, "output_length": 5}\n'
                      '{"timestamp": 1, "input_length": 0, "output_length": 5}\n'
                      '{"timestamp": 2, "input_length": 6, "output_length": 5}\n')
    out = tmp_path / "out.jsonl"
    assert cli("import", "--format", "mooncake", str(source), "-o", str(out), "--skip-bad") == 0
    assert "skipped 1 bad rows (1 non-positive length)" in capsys.readouterr().out
    assert len(load_trace(out)) == 2


def test_failed_import_keeps_an_existing_output(tmp_path: Path, cli) -> None:
    out = tmp_path / "out.jsonl"
    out.write_text("previous\n")
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    assert cli("import", "--format", "mooncake", str(empty), "-o", str(out)) == 2
    assert out.read_text() == "previous\n"


@pytest.mark.parametrize("argv, message", [
    (["stats", "nope.jsonl"], "no such trace file"),
    (["stats", "chat", "--buckets", "0"], "--buckets: must be >= 1"),
    (["generate", "--profile", "chat"], "give --profile and -o FILE"),
    (["generate", "--profile", "batch", "--rate", "500", "-o", "x.jsonl"], "--rate:"),
])
def test_bad_options_exit_2_with_one_message(argv, message: str, cli, capsys, tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert cli(*argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("infertop: error: ") and message in err
    assert not (tmp_path / "x.jsonl").exists()


def test_python_dash_m_entry_point(tmp_path: Path) -> None:
    out = tmp_path / "t.jsonl"
    done = subprocess.run([sys.executable, "-m", "infertop", "trace", "generate", "--profile", "translate",
                           "-n", "50", "-o", str(out)], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    bad = subprocess.run([sys.executable, "-m", "infertop", "trace", "stats", str(tmp_path / "missing.csv")],
                         cwd=REPO, capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and bad.stderr.startswith("infertop: error:")


def test_output_into_a_missing_folder_is_a_named_error(tmp_path: Path, cli, capsys) -> None:
    target = tmp_path / "missing" / "out.jsonl"
    assert cli("generate", "--profile", "chat", "-n", "5", "-o", str(target)) == 2
    assert f"{target}: cannot write: folder" in capsys.readouterr().err
