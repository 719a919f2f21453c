"""A synthetic session of N request records (default 300,000: ~200 MB of JSON, what a
dashboard left running a day at a few requests per second saves), and how long
`snapshot show`, `snapshot compare` and `snapshot export --csv` take on it, with the peak RSS
of each. A benchmark that prints numbers, not a test: the machine it runs on is shared.

    PYTHONPATH=$PWD python benchmarks/large_session.py [--records N] [--keep DIR]

Each command runs in a fresh `python -m infertop` process, so the times include start-up and
the CPU time and peak RSS are that command's own (os.wait4's rusage).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

CONFIGS = {"c1": {"compile": "off", "label": "eager", "notes": []},
           "c2": {"compile": "default", "label": "compile=default", "notes": []}}


def _record(index: int, rng: random.Random) -> dict:
    config_id = "c1" if index < 150_000 else "c2"
    arrival = index * 0.3
    queue = rng.uniform(0, 20)
    encoder, decoder = rng.uniform(2, 8), rng.uniform(50, 400)
    start = arrival + queue / 1000
    output = rng.randint(1, 64)
    end = start + (encoder + decoder) / 1000
    failed = index % 997 == 0
    return {
        "id": f"r{index}", "seq": index, "config_id": config_id,
        "input_tokens": rng.randint(4, 500), "padded_tokens": 512,
        "output_tokens": 0 if failed else output, "arrival_s": arrival, "start_s": start,
        "first_token_s": None if failed else start + encoder / 1000, "end_s": end,
        "queue_ms": queue, "compile_stall_ms": 0.0, "encoder_ms": encoder,
        "decoder_ms": decoder, "ttft_ms": None if failed else queue + encoder + 3,
        "tpot_ms": None if failed or output < 2 else decoder / output,
        "latency_ms": (end - arrival) * 1000, "kv_cache_bytes": 1_572_864,
        "kv_cache_used_bytes": rng.randint(1000, 1_572_864), "kv_self_attention_bytes": 786_432,
        "kv_cross_attention_bytes": 786_432, "batch_size": 1,
        "error": "RuntimeError: synthetic" if failed else None,
        "last_token_s": None if failed else end}


def write_snapshot(path: Path, records: int, seed: int = 0) -> None:
    """Written the way infertop writes one (json.dumps, indent=1), one record at a time."""
    rng = random.Random(seed)
    head = {"schema_version": 1,
            "environment": {"device": "cpu", "device_name": "synthetic", "torch": "-"},
            "model": {"name": "t5-small", "dtype": "fp32", "parameters": 60_506_624},
            "trace": {"name": "synthetic"}, "settings": {}, "configs": CONFIGS}
    with path.open("w") as out:
        out.write(json.dumps(head, indent=1)[:-2] + ',\n "requests": [\n')
        for index in range(records):
            text = json.dumps(_record(index, rng), indent=1).replace("\n", "\n  ")
            out.write(("  " if index == 0 else ",\n  ") + text)
        out.write('\n ],\n "segments": [],\n "compile_events": [],\n "graph_breaks": [],\n'
                  ' "notices": [],\n "reference_tokens": {},\n "kv_pools": {},\n "live": {}\n}\n')


def _timed(argv: list[str], cwd: Path, checkout: Path) -> tuple[float, float, int, int]:
    """(wall seconds, CPU seconds, peak RSS bytes, exit status) of one `python -m infertop ...`
    process run from `checkout` (this one, or another for a before/after comparison). CPU
    seconds are the fair figure on a shared machine: wall time there is mostly waiting."""
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    start = time.perf_counter()
    process = subprocess.Popen([sys.executable, "-m", "infertop", *argv], cwd=cwd, env=env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    seconds = time.perf_counter() - start
    return (seconds, usage.ru_utime + usage.ru_stime, usage.ru_maxrss * 1024,
            process.returncode)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=300_000)
    parser.add_argument("--keep", default=None, help="write the session here and keep it")
    parser.add_argument("--before", default=None, metavar="CHECKOUT",
                        help="another infertop checkout (e.g. main) to time first, same session")
    args = parser.parse_args()
    folder = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="infertop-bench-"))
    folder.mkdir(parents=True, exist_ok=True)
    try:
        session = folder / "large.json"
        if not session.exists():
            start = time.perf_counter()
            write_snapshot(session, args.records)
            print(f"wrote {session}: {args.records:,} records, "
                  f"{session.stat().st_size / 1e6:.0f} MB in {time.perf_counter() - start:.1f} s")
        print(f"machine: {os.cpu_count()} CPUs, {psutil.virtual_memory().total / 2**30:.0f} GiB, "
              f"load average {os.getloadavg()[0]:.1f}")
        checkouts = [Path(__file__).resolve().parents[1]]
        if args.before:
            checkouts.insert(0, Path(args.before).resolve())
        for argv in (["snapshot", "show", str(session)],
                     ["snapshot", "compare", str(session), str(session)],
                     ["snapshot", "export", str(session), "--csv", "-o", str(folder / "out")]):
            for checkout in checkouts:
                seconds, cpu, peak, status = _timed(argv, folder, checkout)
                print(f"  {' '.join(argv[:2]):17s} {seconds:6.1f} s wall  {cpu:6.1f} s CPU  "
                      f"peak RSS {peak / 2**20:6.0f} MiB  exit {status}  ({checkout})")
                for stale in folder.glob("out.*"):
                    stale.unlink()
    finally:
        if not args.keep:
            shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
