"""Bad command lines: one line `infertop: error: ...` naming what and where, exit 2, nothing
written — and, where no model is needed, before torch is imported (so in well under a second
and without torch's import warnings)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from infertop.cli import main
from probe.common.errors import BadInput
from probe.contract.options import CHOICES, OptConfig, parse_opts

REPO = Path(__file__).resolve().parents[2]
GOOD_ROW = '{"timestamp": 0, "input_length": 5, "output_length": 3}\n'

# (argv, a piece of the one error line). Files named here are made by _files() first.
CASES: list[tuple[list[str], str]] = [
    (["replay", "--out", "run.json", "--opt", "nope=1"], "unknown option 'nope'; valid keys: compile"),
    (["replay", "--out", "run.json", "--opt", "compile=fast"], "choose one of: off, default, reduce-overhead"),
    (["replay", "--out", "run.json", "--threads", "-1"], "argument --threads: expected a whole number from 1 to 1,024, got '-1'"),
    (["replay", "--out", "run.json", "--threads", "0"], "argument --threads: expected a whole number from 1 to 1,024"),
    (["replay", "--out", "run.json", "--speed", "nan"], "argument --speed: expected a number from 0.001 to 1e+06, got 'nan'"),
    (["replay", "--out", "run.json", "--speed", "0"], "argument --speed: expected a number from 0.001 to 1e+06"),
    (["replay", "--out", "run.json", "--speed", "1e-300"], "argument --speed: expected a number from 0.001 to 1e+06, got '1e-300'"),
    (["replay", "--out", "run.json", "--requests", "1000000000"], "argument --requests: expected a whole number from 1 to 10,000,000"),
    (["replay", "--out", "run.json", "--concurrency", "1000000"], "argument --concurrency: expected a whole number from 1 to 1,024"),
    (["replay", "--out", "run.json", "--max-output", "10000000"], "argument --max-output: expected a whole number from 1 to 65,536"),
    (["bench", "--repeats", "1000000", "--out", "b"], "argument --repeats: expected a whole number from 1 to 1,000"),
    (["bench", "--bucket-count", "100000", "--out", "b"], "argument --bucket-count: expected a whole number from 1 to 64"),
    (["replay", "--out", "run.json", "--speed", "-2"], "argument --speed: expected a number from 0.001 to 1e+06"),
    (["replay", "--out", "run.json", "--max-input", "0"], "argument --max-input: expected a whole number from 1 to 65,536"),
    (["replay", "--out", "run.json", "--max-output", "-5"], "argument --max-output: expected a whole number from 1"),
    (["replay", "--out", "run.json", "--max-batch", "0"], "argument --max-batch: expected a whole number from 1 to 4,096, got '0'"),
    (["replay", "--out", "run.json", "--max-batch", "many"], "argument --max-batch: expected a whole number from 1 to 4,096, got 'many'"),
    (["replay", "--out", "run.json", "--batch-window", "-1"], "argument --batch-window: expected a finite number > 0 and <= 10000, got '-1'"),
    (["replay", "--out", "run.json", "--kv-budget", "12parsecs"], "argument --kv-budget: expected a size like 8GiB, 512MiB or 2.5GB (at least 1MiB), got '12parsecs'"),
    (["replay", "--out", "run.json", "--kv-budget", "100"], "argument --kv-budget: expected a size like 8GiB"),
    (["replay", "--out", "run.json", "--kv-budget", "nanGiB"], "argument --kv-budget: expected a size like 8GiB"),
    (["replay", "--out", "run.json", "--requests", "0"], "argument --requests: expected a whole number from 1 to 10,000,000"),
    (["replay", "--out", "run.json", "--concurrency", "0"], "argument --concurrency: expected a whole number from 1 to 1,024"),
    (["replay", "--out", "run.json", "--buckets", ""], "--buckets: expected comma-separated whole numbers from 1 to 10,000,000"),
    (["replay", "--out", "run.json", "--buckets", "64,,128"], "--buckets: expected comma-separated whole numbers"),
    (["replay", "--out", "run.json", "--buckets", "64;128"], "--buckets: expected comma-separated whole numbers"),
    (["replay", "--out", "run.json", "--buckets", "4096"], "--buckets: edge 4096 is above --max-input 512"),
    (["replay", "--out", "run.json", "--buckets", "64,300", "--max-input", "256"], "--buckets: edge 300 is above --max-input 256"),
    (["replay", "--out", "run.json", "--opt", "batching=continuous", "--buckets", "1024"], "--buckets: edge 1024 is above --max-input 512"),
    # a mistyped flag is named, not the word after it; no abbreviations
    (["--modle", "t5-tiny"], "unknown flag --modle (did you mean --model?)"),
    (["replay", "--out", "run.json", "--request", "5"], "unknown flag --request (did you mean --requests?)"),
    (["trace", "import", "--fromat", "mooncake", "good.jsonl"], "unknown flag --fromat (did you mean --format?)"),
    (["bench", "--rate", "2", "--out", "b"], "unknown flag --rate"),
    (["replay", "--out", "folder"], "--out folder: cannot write: it is a folder"),
    (["replay", "--out", "a-file/run.json"], "--out a-file/run.json: cannot write: a-file is a file, not a folder"),
    (["replay", "--out", "/proc/nowhere/run.json"], "--out /proc/nowhere/run.json: cannot write: /proc is a system folder"),
    # one output rule for every command (probe/common/output_rule.py)
    (["replay", "--out", "good.jsonl", "--trace", "good.jsonl"], "--out good.jsonl: cannot write: it is the input good.jsonl"),
    (["replay", "--out", "./folder/../good.jsonl", "--trace", "good.jsonl"], "cannot write: it is the input good.jsonl"),
    (["replay", "--out", "no/such/run.json"], "--out no/such/run.json: cannot write: folder no/such does not exist"),
    (["replay", "--out", "folder/run.json", "--model", "folder"], "--out folder/run.json: cannot write: it is inside the input folder folder"),
    (["trace", "import", "--format", "mooncake", "good.jsonl", "-o", "good.jsonl"], "-o good.jsonl: cannot write: it is the input good.jsonl"),
    (["trace", "generate", "--profile", "chat", "-o", "/dev/full"], "-o /dev/full: cannot write: /dev is a system folder"),
    (["trace", "generate", "--profile", "chat", "-o", str(REPO / "workloads" / "builtin" / "chat.jsonl")], "cannot write: it is inside infertop's own built-in traces"),
    (["trace", "generate", "--builtin", "-o", "x.jsonl", "--profile", "chat"], "trace generate --builtin rewrites the package's built-in traces with their own settings; -o, --profile cannot apply"),
    (["trace", "generate", "--builtin", "-n", "5"], "-n cannot apply to it"),
    (["bench", "--out", "/sys/b"], "--out /sys/b: cannot write: /sys is a system folder"),
    (["bench", "--out", "no/such/b"], "--out no/such/b: cannot write: folder no/such does not exist"),
    (["bench", "--out", "folder/b", "--model", "folder"], "--out folder/b: cannot write: it is inside the input folder folder"),
    # bench's options, before anything starts
    (["bench", "--experiments", "", "--out", "b"], "--experiments '': nothing to run; choose from E1"),
    (["bench", "--experiments", " , ", "--out", "b"], "--experiments ' , ': nothing to run"),
    (["bench", "--experiments", "E1,E99", "--out", "b"], "--experiments: unknown experiment 'E99'"),
    (["bench", "--compile-backend", "nope", "--out", "b"], "--compile-backend 'nope': not a torch.compile backend infertop can study; choose one of inductor, eager"),
    (["replay", "--compile-backend", "nope", "--out", "r.json"], "--compile-backend 'nope': not a torch.compile backend infertop can study; choose one of inductor, eager"),
    (["bench", "--ray", "999.999.1.1:1", "--out", "b"], "--ray '999.999.1.1:1': not a Ray address: '999.999.1.1' is not an IPv4 address"),
    (["bench", "--ray", "10.0.0.1:99999", "--out", "b"], "not a Ray address: port '99999' is not a whole number from 1 to 65535"),
    (["bench", "--ray", "10.0.0.1", "--out", "b"], "not a Ray address: expected local, auto, HOST:PORT or ray://HOST:PORT"),
    (["bench", "--ray", "ray://bad_host:6379", "--out", "b"], "not a Ray address: 'bad_host' is not a host name"),
    (["replay", "--out", "run.json", "--trace", "binary.jsonl"], "binary.jsonl:1: contains a NUL byte"),
    (["replay", "--out", "run.json", "--trace", "utf16.jsonl"], "utf16.jsonl:1: is UTF-16"),
    (["replay", "--out", "run.json", "--trace", "far.jsonl"], "far.jsonl:2: field 'timestamp': expected milliseconds from trace start (a number from 0 to 1e+15), got 1e+300"),
    (["replay", "--out", "run.json", "--trace", "/dev/zero"], "/dev/zero: is a device"),
    (["trace", "generate", "--profile", "chat", "--rate", "nan", "-o", "g.jsonl"], "argument --rate: expected a number from 0.0001 to 1e+06, got 'nan'"),
    (["trace", "generate", "--profile", "chat", "-n", "0", "-o", "g.jsonl"], "argument -n/--requests: expected a whole number from 1 to 1,000,000"),
    (["trace", "generate", "--profile", "chat", "-n", "10000000", "-o", "g.jsonl"], "argument -n/--requests: expected a whole number from 1 to 1,000,000, got '10000000'"),
    (["trace", "generate", "--profile", "chat", "--seed", "-1", "-o", "g.jsonl"], "argument --seed: expected a whole number >= 0"),
    (["trace", "generate", "--profile", "chat", "-o", "folder"], "-o folder: cannot write: it is a folder"),
    (["trace", "generate", "--profile", "chat", "--rate", "1e-300", "-n", "9", "-o", "g.jsonl"], "argument --rate: expected a number from 0.0001 to 1e+06, got '1e-300'"),
    (["trace", "generate", "--profile", "chat", "--rate", "0.0001", "-n", "100000", "-o", "g.jsonl"], "above the 1e+08 s a trace may span"),
    (["trace", "import", "--format", "sharegpt", "share.json", "--rate", "inf", "-o", "o.jsonl"], "argument --rate: expected a number from 0.0001 to 1e+06, got 'inf'"),
    (["trace", "import", "--format", "mooncake", "far.jsonl", "--max-input", "0", "-o", "o.jsonl"], "argument --max-input"),
    (["trace", "import", "--format", "mooncake", "far.jsonl", "--scale-quantile", "1.5", "-o", "o.jsonl"], "argument --scale-quantile: expected a finite number > 0 and <= 1"),
    (["trace", "import", "--format", "mooncake", "good.jsonl", "-o", "missing/o.jsonl"], "-o missing/o.jsonl: cannot write: folder missing does not exist"),
    (["trace", "stats", "big.jsonl"], "big.jsonl:1: field 'input_length': expected at most 10,000,000 tokens, got 1e+30"),
    (["trace", "stats", "deep.jsonl"], "deep.jsonl:1: not valid JSON here: nested too deeply"),
    (["bench", "--requests", "0", "--out", "b"], "argument --requests: expected a whole number from 1 to 10,000,000"),
    (["bench", "--repeats", "0", "--out", "b"], "argument --repeats: expected a whole number from 1 to 1,000"),
    (["bench", "--bucket-count", "0", "--out", "b"], "argument --bucket-count: expected a whole number from 1 to 64"),
    (["bench", "--threads", "0", "--out", "b"], "argument --threads"),
    (["bench", "--out", "a-file"], "--out a-file: cannot write: it exists and is not a folder"),
    (["bench", "--trace", "missing.jsonl", "--out", "b"], "missing.jsonl: no such trace file"),
    (["bench", "--trace", "binary.jsonl", "--out", "b"], "binary.jsonl:1: contains a NUL byte"),
    (["snapshot", "show", "binary.jsonl"], "snapshot binary.jsonl:1: contains a NUL byte"),
    (["snapshot", "show", "/dev/zero"], "snapshot /dev/zero: is a device"),
    (["snapshot", "export", "good.jsonl", "--csv", "-o", "/dev/full"], "--out /dev/full.requests.csv: cannot write: /dev is a system folder"),
    (["snapshot", "export", "good.jsonl", "--csv", "-o", "no/such/x"], "--out no/such/x.requests.csv: cannot write: folder no/such does not exist"),
    (["snapshot", "recover", "good.jsonl", "-o", "good.jsonl"], "-o good.jsonl: cannot write: it is the input good.jsonl"),
    (["snapshot", "recover", "missing.jsonl", "-o", "x.json"], "session journal missing.jsonl: cannot read: No such file or directory"),
    (["snapshot", "recover", "good.jsonl", "-o", "x.json"], "session journal good.jsonl: the run ended before its session began"),
    (["snapshot", "recover", "/dev/zero", "-o", "x.json"], "session journal /dev/zero: not a regular file"),
]

# Runs every case in one fresh interpreter, so what each imports is visible.
DRIVER = """
import contextlib, io, json, sys
from infertop.cli import main
results = []
for argv in json.loads(sys.argv[1]):
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            code = main(argv)
        except SystemExit as exit:
            code = exit.code
    heavy = sorted(m for m in ("torch", "transformers", "torchao") if m in sys.modules)
    results.append([code, err.getvalue(), heavy])
print(json.dumps(results))
"""


def _files(folder: Path) -> None:
    (folder / "folder").mkdir()
    (folder / "a-file").write_text("x")
    (folder / "binary.jsonl").write_bytes(b"\x7fELF\x00\x01")
    (folder / "utf16.jsonl").write_bytes(GOOD_ROW.encode("utf-16"))
    (folder / "far.jsonl").write_text(GOOD_ROW + '{"timestamp": 1e300, "input_length": 5, "output_length": 3}\n')
    (folder / "big.jsonl").write_text('{"timestamp": 0, "input_length": 1e30, "output_length": 3}\n')
    (folder / "deep.jsonl").write_text("[" * 100_000 + "]" * 100_000 + "\n")
    (folder / "good.jsonl").write_text(GOOD_ROW)
    (folder / "share.json").write_text("[]")


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory) -> tuple[Path, dict[str, set[str]], list[tuple[int, str, list[str]]]]:
    folder = tmp_path_factory.mktemp("cli")
    _files(folder)
    before = set(os.listdir(folder))
    done = subprocess.run([sys.executable, "-c", DRIVER, json.dumps([argv for argv, _ in CASES])],
                          cwd=folder, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.returncode == 0, done.stderr
    return folder, {"before": before, "after": set(os.listdir(folder))}, json.loads(done.stdout)


@pytest.mark.parametrize("index", range(len(CASES)), ids=[" ".join(argv)[:60] for argv, _ in CASES])
def test_bad_input_is_one_line_exit_2(outcomes, index: int) -> None:
    _folder, _listing, results = outcomes
    code, err, _heavy = results[index]
    expected = CASES[index][1]
    lines = err.strip().splitlines()
    assert code == 2, err
    assert len(lines) == 1 and lines[0].startswith("infertop: error: "), err
    assert expected in lines[0]


def test_nothing_written_and_torch_never_imported(outcomes) -> None:
    _folder, listing, results = outcomes
    assert listing["after"] == listing["before"]       # no output, no temporary, no bench folder
    # Every case but `snapshot` (its reader's module imports torch) was refused before torch;
    # the snapshot cases come last, so the ones before them are not masked.
    assert [argv for (argv, _), (_, _, heavy) in zip(CASES, results)
            if heavy and argv[0] != "snapshot"] == []


def test_no_parser_accepts_an_abbreviation() -> None:
    from infertop.cli import build_parser

    def parsers(parser):
        yield parser
        for action in parser._actions:
            for sub in getattr(action, "choices", None).values() if hasattr(action, "_name_parser_map") else ():
                yield from parsers(sub)

    found = list(parsers(build_parser()))
    assert len(found) > 8 and all(not p.allow_abbrev for p in found)


def test_a_bad_opt_is_exactly_one_line_from_a_fresh_process(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "infertop.cli", "replay", "--opt", "nope=1", "--out", "x.json"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == f"infertop: error: unknown option 'nope'; valid keys: {', '.join(CHOICES)}\n"
    assert os.listdir(tmp_path) == []


# -- cases that need the model: in this process ------------------------------------------------
def test_more_requests_than_the_trace_has_are_served_with_a_note(tmp_path: Path, capsys) -> None:
    trace = tmp_path / "three.jsonl"
    trace.write_text("".join(GOOD_ROW.replace('"timestamp": 0', f'"timestamp": {i}') for i in range(3)))
    out = tmp_path / "run.json"
    code = main(["replay", "--model", "t5-tiny", "--device", "cpu", "--trace", str(trace),
                 "--requests", "10", "--speed", "1000", "--max-output", "4", "--out", str(out)])
    assert code == 0
    assert "infertop: note: --requests 10: the trace has 3 requests; serving 3" in capsys.readouterr().err
    assert len(json.loads(out.read_text())["requests"]) == 3


def test_bench_leaves_no_folder_behind_for_a_bad_model(tmp_path: Path, capsys) -> None:
    out = tmp_path / "bench-out"
    code = main(["bench", "--model", str(tmp_path / "no-model"), "--quick", "--device", "cpu",
                 "--torch-trace", "--out", str(out)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and err[-1].startswith("infertop: error: --model ") and "is not a preset" in err[-1]
    assert not out.exists()


def test_bench_keeps_an_existing_out_folder(tmp_path: Path, capsys) -> None:
    out = tmp_path / "bench-out"
    out.mkdir()
    assert main(["bench", "--model", str(tmp_path / "no-model"), "--quick", "--device", "cpu",
                 "--out", str(out)]) == 2
    assert out.is_dir()


# -- fuzz: --opt --------------------------------------------------------------------------------
any_text = st.text(st.characters(exclude_categories=()), max_size=20)
near_pairs = st.tuples(st.sampled_from([*CHOICES, "kv-cache", " compile ", "COMPILE", ""]),
                       st.sampled_from(["=", "", "==", " = "]),
                       st.one_of(st.sampled_from([v for vs in CHOICES.values() for v in vs]), any_text)
                       ).map("".join)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pairs=st.lists(st.one_of(near_pairs, any_text), max_size=4))
def test_fuzz_opt_parsing(pairs: list[str]) -> None:
    try:
        config = parse_opts(pairs)
    except BadInput as error:
        assert str(error) and "\n" not in str(error)
        return
    assert isinstance(config, OptConfig)
    assert all(getattr(config, key) in values for key, values in CHOICES.items())
