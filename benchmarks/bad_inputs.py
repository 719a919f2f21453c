"""Rerun of the bad-input fuzz of issue 21 (resource bounds, checkpoints, terminal strings,
strict readers): each case runs `python -m infertop …` in a fresh process and is handled as
promised when it exits 2 with one line `infertop: error: …` holding the expected words, no
traceback, no raw control character, and nothing written (a shown session: exit 0, nothing
raw). Prints one line per case and the counts.

    PYTHONPATH=$PWD python benchmarks/bad_inputs.py [--checkout /work/main]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from probe.checks.checkpoint_check import checked_shape, expected_tensors

RAW = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f]")
TINY = {"model_type": "t5", "d_model": 8, "d_ff": 16, "d_kv": 4, "num_heads": 2,
        "num_layers": 1, "vocab_size": 300, "decoder_start_token_id": 0}


def checkpoint(folder: Path, config: dict, tensors: dict | None = None) -> str:
    """A folder with config.json and a header-only safetensors (the checks read headers)."""
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps(config))
    if tensors is None:   # the tiny model's: what is bad is the config alone
        tensors = expected_tensors(checked_shape("x", "t5", TINY))
    header = json.dumps({n: {"dtype": "F32", "shape": list(d), "data_offsets": [0, 0]}
                         for n, d in tensors.items()}).encode()
    (folder / "model.safetensors").write_bytes(len(header).to_bytes(8, "little") + header)
    return str(folder)


# a real saved session (from `make screenshots`), changed one field at a time
VALID_SESSION = Path(__file__).resolve().parents[1] / "screenshots/sessions/1-baseline.json"


def snapshot(path: Path, change) -> str:
    document = json.loads(VALID_SESSION.read_text())
    change(document)
    path.write_text(json.dumps(document))
    return str(path)


def cases(tmp: Path) -> list[tuple[str, list[str], str]]:
    out = str(tmp / "out.json")
    replay = ["replay", "--trace", "chat", "--out", out, "--model"]
    model = lambda name, **c: checkpoint(tmp / name, {**TINY, **c})  # noqa: E731
    azure = tmp / "azure.csv"
    azure.write_text("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.68,374,44\n")
    dup = tmp / "dup.csv"
    dup.write_text("timestamp,input_length,output_length,input_length\n0,5,5,6\n")
    quoted = tmp / "quoted.jsonl"
    quoted.write_text('{"timestamp": "0", "input_length": 5, "output_length": 5}\n')
    far = tmp / "far.jsonl"
    far.write_text('{"timestamp": 0, "input_length": 5, "output_length": 5}\n'
                   '{"timestamp": 1e10, "input_length": 5, "output_length": 5}\n')
    hostile_trace = tmp / "hostile.jsonl"
    hostile_trace.write_text('{"timestamp": 0, "input_length": 5, "output_length": 5}\n'
                             '\x1b]0;pwned\x07\x1b[2J{\n')
    share = tmp / "share.json"
    share.write_text('[{"conversations": [{"from": "human", "value": "hi"}, '
                     '{"from": "gpt", "value": "yo"}]}]')
    imp = ["trace", "import", "-o", str(tmp / "o.jsonl")]
    hostile = "\x1b]0;pwned\x07\x1b[2J\x9b1m"

    def name_change(d):
        d["model"]["name"] = hostile
        d["trace"]["name"] = hostile
        d["configs"]["c1"]["notes"] = [hostile]
    return [
        ("d_model 'abc'", replay + [model("abc", d_model="abc")], "field d_model"),
        ("d_model NaN", replay + [model("nan", d_model=float("nan"))], "field d_model"),
        ("num_layers -1", replay + [model("neg", num_layers=-1)], "field num_layers"),
        ("num_heads 0", replay + [model("h0", num_heads=0)], "field num_heads"),
        ("num_layers 10,000,000", replay + [model("huge", num_layers=10_000_000)],
         "field num_layers: expected a whole number from 1 to 1,024"),
        ("fits no memory", replay + [model("mem", num_layers=1024, d_model=65536, d_ff=262144)],
         "memory available"),
        ("only shared.weight", replay + [checkpoint(tmp / "shared", TINY, {
            "shared.weight": (300, 8)})], "hold 1 of the model's"),
        ("an unrelated tensor", replay + [checkpoint(tmp / "unrel", TINY, {"x": (2,)})],
         "hold 0 of the model's"),
        ("a tensor of the wrong shape", replay + [checkpoint(
            tmp / "shape", {**TINY, "d_ff": 32}, expected_tensors(checked_shape("x", "t5", TINY)))],
         "has shape"),
        ("feed_forward_proj bad", replay + [model("ffp", feed_forward_proj="gated-x")],
         "feed_forward_proj"),
        ("decoder_start out of range", replay + [model("dst", decoder_start_token_id=999)],
         "decoder_start_token_id"),
        ("a model path with ESC", replay + [str(tmp / "no\x1b[2Jsuch")], "no\\x1b[2Jsuch"),
        ("--speed 1e-300", replay + ["t5-tiny", "--speed", "1e-300"], "--speed"),
        ("--speed 0", replay + ["t5-tiny", "--speed", "0"], "--speed"),
        ("--requests 10^9", replay + ["t5-tiny", "--requests", "1000000000"], "--requests"),
        ("--concurrency 10^6", replay + ["t5-tiny", "--concurrency", "1000000"], "--concurrency"),
        ("--max-output 10^7", replay + ["t5-tiny", "--max-output", "10000000"], "--max-output"),
        ("a 115-day trace", ["replay", "--trace", str(far), "--out", out, "--model", "t5-tiny"],
         "the longest replay is 31 days"),
        ("generate -n 10,000,000", ["trace", "generate", "--profile", "chat", "-n", "10000000",
                                    "-o", str(tmp / "g.jsonl")], "-n/--requests"),
        ("generate --rate 1e-300", ["trace", "generate", "--profile", "chat", "--rate", "1e-300",
                                    "-o", str(tmp / "g.jsonl")], "--rate"),
        ("bench --repeats 10^6", ["bench", "--repeats", "1000000", "--out", str(tmp / "b")],
         "--repeats"),
        ("bench --bucket-count 10^5", ["bench", "--bucket-count", "100000", "--out",
                                       str(tmp / "b")], "--bucket-count"),
        ("CSV duplicate column", ["trace", "stats", str(dup)], "appears twice"),
        ('JSONL "timestamp": "0"', ["trace", "stats", str(quoted)], "expected a JSON number"),
        ("--rate with azure", imp + [str(azure), "--format", "azure", "--rate", "2"],
         "--rate does not apply"),
        ("--seed with azure", imp + [str(azure), "--format", "azure", "--seed", "2"],
         "--seed does not apply"),
        ("--sort with sharegpt", imp + [str(share), "--format", "sharegpt", "--sort"],
         "--sort does not apply"),
        ("--scale-quantile without --fit scale", imp + [str(azure), "--format", "azure",
                                                       "--scale-quantile", "0.5"],
         "--scale-quantile applies only"),
        ("snapshot: unknown config id", ["snapshot", "show", snapshot(
            tmp / "s1.json", lambda d: d["requests"][0].update(config_id="c9"))],
         "is not one of the session's configs"),
        ("snapshot: negative tokens", ["snapshot", "compare", *[snapshot(
            tmp / "s2.json", lambda d: d["requests"][0].update(output_tokens=-3))] * 2],
         "expected a count >= 0"),
        ("export: negative bytes", ["snapshot", "export", snapshot(
            tmp / "s3.json", lambda d: d["requests"][1].update(kv_cache_bytes=-1)), "--csv",
            "-o", str(tmp / "x")], "expected a count >= 0"),
        ("trace stats: ESC in a bad line", ["trace", "stats", str(hostile_trace)], "hostile"),
        ("show: ESC/OSC in names", ["snapshot", "show", snapshot(tmp / "h.json", name_change)],
         ""),
        ("compare: ESC/OSC in names", ["snapshot", "compare", str(tmp / "h.json"),
                                       str(tmp / "h.json")], ""),
    ]


def run(tmp: Path, argv: list[str], words: str, checkout: Path) -> tuple[bool, str]:
    before = set(tmp.rglob("*"))
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    result = subprocess.run([sys.executable, "-m", "infertop", *argv], cwd=tmp, env=env,
                            capture_output=True, text=True, timeout=300,
                            errors="surrogateescape")
    written = set(tmp.rglob("*")) - before
    lines = result.stderr.strip().splitlines()
    raw = RAW.search(result.stdout) or RAW.search(result.stderr)
    if not words:   # a session shown: exit 0, nothing raw
        ok = result.returncode == 0 and not raw
        return ok, f"exit {result.returncode}{', raw control characters' if raw else ''}"
    ok = (result.returncode == 2 and len(lines) == 1 and lines[0].startswith("infertop: error:")
          and words in lines[0] and not raw and not written and "Traceback" not in result.stderr)
    return ok, (lines[-1][:150] if lines else f"exit {result.returncode}, nothing said")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkout", default=str(Path(__file__).resolve().parents[1]),
                        help="the infertop checkout to run (default: this one; e.g. main)")
    checkout = Path(parser.parse_args().checkout).resolve()
    tmp = Path(tempfile.mkdtemp(prefix="infertop-bad-"))
    try:
        results = []
        for name, argv, words in cases(tmp):
            ok, said = run(tmp, argv, words, checkout)
            results.append(ok)
            print(f"{'ok ' if ok else 'NOT'}  {name:38s} {said}")
        print(f"\n{sum(results)} of {len(results)} handled as promised, "
              f"{len(results) - sum(results)} not")
        return 0 if all(results) else 1
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
