"""`make peer-check`: load generators nobody here wrote drive `infertop serve` on loopback,
and each one's client records are joined, request by request, with the session the server
saved (tools/peer_agreement.py).

- AIPerf replays the first N requests of the built-in azure-conv trace (real production
  arrivals, Mooncake's format: timestamps in ms) on a fixed schedule, `--endpoint-type
  completions --streaming`;
- guidellm replays the same requests (its `replay` profile, timestamps in s);
- `sequential` (with `--peers …,sequential`): this script's own client, urllib in one thread,
  one request at a time on an idle server: the floor HTTP and SSE add on loopback, its TTFT
  read at the first chunk whatever its text.

Both count tokens with infertop's own tokenizer, saved as a Hugging Face tokenizer folder. Each
peer gets a fresh server (its own session), started on a free port and stopped with SIGTERM
(the server drains and saves). The table, the command and the machine go to OUT/peers.md;
docs/peers.md holds one run's. The peers live in their own virtual environment
(`--peers-bin`, the Makefile's PEERS_VENV): they pin their own libraries.

    python -m tools.peer_check --peers-bin /path/to/peers-venv/bin --out peer-check
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from probe.session_store.peer_imports import read_peer_file
from probe.session_store.peer_imports.peer_run import PeerFile, PeerRequest, PeerRun
from probe.session_store.snapshot import read_document, saved_session
from tools.peer_agreement import Agreement, agreement, agreement_table
from workloads.trace import builtin_path

PEERS = ("aiperf", "guidellm")
SEQUENTIAL = "sequential"      # this script's own client: one request at a time, no load
READY_S = 600           # a cold start compiles on a busy 2-core machine
PEER_S = 1200


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    bin_dir = _peers_bin(args.peers_bin)
    tokenizer = _save_tokenizer(out / "tokenizer")
    trace_ms, trace_s = _traces(out, args.requests, args.max_input, args.max_output)
    rows: list[Agreement] = []
    for peer in args.peers.split(","):
        served = out / f"served-{peer}.json"
        with _server(out, peer, served, args.opt) as port:
            if peer == SEQUENTIAL:
                measured = _sequential(port, trace_ms)
            else:
                measured = read_peer_file(_run_peer(peer, bin_dir, port, tokenizer, trace_ms,
                                                    trace_s, out, args.time_scale))
        records = saved_session(read_document(served), source=str(served)).records
        rows.append(agreement(measured, records))
    table = agreement_table(rows)
    (out / "peers.md").write_text(_report(argv, bin_dir, args, table))
    print(table)
    # The server must hold every request a client got, and each difference must be ≥ 0; a
    # request only the server has (guidellm leaves the last one out of its report) is said in
    # the table but is the client's miss, not a disagreement.
    lost = any(r.client_only for r in rows)
    return 0 if all(r.holds for r in rows) and not lost else 1


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m tools.peer_check", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--peers-bin", default=None, metavar="DIR",
                        help="the folder holding the aiperf and guidellm commands (default: "
                             "this python's folder, then PATH)")
    parser.add_argument("--out", default="peer-check", metavar="DIR")
    parser.add_argument("--peers", default=",".join(PEERS),
                        help=f"any of {', '.join(PEERS + (SEQUENTIAL,))} (default "
                             f"{','.join(PEERS)})")
    parser.add_argument("--requests", type=int, default=30,
                        help="the first N requests of azure-conv (default 30)")
    parser.add_argument("--max-input", type=int, default=400)
    parser.add_argument("--max-output", type=int, default=24,
                        help="output lengths cut to this (t5-tiny on 2 cores; default 24)")
    parser.add_argument("--time-scale", type=float, default=1.0,
                        help="guidellm's replay time scale (1: the trace's own arrivals)")
    parser.add_argument("--opt", action="append", default=None, metavar="KEY=VALUE",
                        help="the server's options (default batching=continuous: a token "
                             "streams as its step makes it)")
    return parser


def _peers_bin(given: str | None) -> Path:
    for folder in ([Path(given)] if given else [Path(sys.executable).parent]):
        if all((folder / name).exists() for name in PEERS):
            return folder
    found = [shutil.which(name) for name in PEERS]
    if given is None and all(found):
        return Path(str(found[0])).parent
    sys.exit(f"peer-check: no aiperf and guidellm in {given or 'this python folder or PATH'};"
             f" install them: python3 -m venv V && V/bin/pip install aiperf guidellm, then "
             f"--peers-bin V/bin (or make peer-check)")


def _save_tokenizer(folder: Path) -> Path:
    """infertop's tokenizer (t5-tiny's: one token a UTF-8 byte) as a folder AutoTokenizer
    loads, so each peer counts tokens as the server does."""
    from probe.engine.model.tokenizer import byte_tokenizer
    byte_tokenizer().save_pretrained(folder)
    return folder


def _traces(out: Path, requests: int, max_input: int, max_output: int) -> tuple[Path, Path]:
    """The first `requests` rows of azure-conv, lengths cut to t5-tiny's: Mooncake's ms for
    AIPerf, seconds for guidellm."""
    rows = []
    with builtin_path("azure-conv").open() as handle:
        for line in handle:
            row = json.loads(line)
            rows.append({"timestamp": row["timestamp"],
                         "input_length": min(row["input_length"], max_input),
                         "output_length": min(row["output_length"], max_output)})
            if len(rows) == requests:
                break
    trace_ms, trace_s = out / "trace-mooncake.jsonl", out / "trace-seconds.jsonl"
    trace_ms.write_text("".join(json.dumps(r) + "\n" for r in rows))
    trace_s.write_text("".join(json.dumps({**r, "timestamp": r["timestamp"] / 1e3}) + "\n"
                               for r in rows))
    return trace_ms, trace_s


class _server:
    """`infertop serve --model t5-tiny` on a free loopback port, ready, then SIGTERM: it
    drains what it holds and saves the session."""

    def __init__(self, out: Path, peer: str, served: Path, opts: list[str] | None) -> None:
        self.port = _free_port()
        options = [f"--opt={o}" for o in (opts or ["batching=continuous"])]
        self.command = [sys.executable, "-m", "infertop", "serve", "--model", "t5-tiny",
                        "--port", str(self.port), "--out", str(served), "--drift-every", "0",
                        *options]
        self.log = (out / f"serve-{peer}.log").open("w")

    def __enter__(self) -> int:
        self.process = subprocess.Popen(self.command, stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + READY_S
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                sys.exit(f"peer-check: the server exited ({self.process.returncode}); see "
                         f"{self.log.name}")
            if _ready(self.port):
                return self.port
            time.sleep(1)
        self.__exit__()
        sys.exit(f"peer-check: the server was not ready in {READY_S} s; see {self.log.name}")

    def __exit__(self, *_: object) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=180)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.log.close()


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _ready(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as reply:
            return reply.status == 200 and json.load(reply).get("status") == "ready"
    except (OSError, ValueError):
        return False


def _run_peer(peer: str, bin_dir: Path, port: int, tokenizer: Path, trace_ms: Path,
              trace_s: Path, out: Path, time_scale: float) -> Path:
    url = f"http://127.0.0.1:{port}"
    if peer == "aiperf":
        folder = out / "aiperf"
        command = [str(bin_dir / "aiperf"), "profile", "--model", "t5-tiny", "--url", url,
                   "--endpoint-type", "completions", "--streaming", "--tokenizer",
                   str(tokenizer), "--input-file", str(trace_ms), "--custom-dataset-type",
                   "mooncake_trace", "--fixed-schedule", "--artifact-dir", str(folder),
                   "--ui-type", "none", "--no-server-metrics"]
        result = folder / "profile_export.jsonl"
    elif peer == "guidellm":
        result = out / "guidellm" / "benchmarks.json"
        command = [str(bin_dir / "guidellm"), "run", "--backend",
                   f"kind=openai_http,target={url},model=t5-tiny,"
                   f"request_format=/v1/completions",
                   "--tokenizer", f"kind=huggingface_auto,model={tokenizer}",
                   "--data", json.dumps({"kind": "trace_synthetic",
                                         "source": {"kind": "json_file", "path": str(trace_s)}}),
                   "--profile", f"kind=replay,time_scale={time_scale}",
                   "--output", json.dumps({"kind": "json", "path": str(result)}),
                   "--disable-console-interactive"]
    else:
        sys.exit(f"peer-check: --peers {peer}: the peers are {', '.join(PEERS)}")
    with (out / f"{peer}.log").open("w") as log:
        log.write(shlex.join(command) + "\n")
        log.flush()
        done = subprocess.run(command, stdout=log, stderr=subprocess.STDOUT, timeout=PEER_S,
                              cwd=out, check=False)
    if done.returncode != 0 or not result.exists():
        sys.exit(f"peer-check: {peer} failed ({done.returncode}); see {out / f'{peer}.log'}")
    return result


def _sequential(port: int, trace: Path) -> PeerFile:
    """The trace's requests one after another, each streamed, timed here: sent → first SSE
    chunk (whatever its text) and sent → `data: [DONE]` read."""
    requests = []
    for index, line in enumerate(trace.read_text().splitlines()):
        row = json.loads(line)
        request_id = f"sequential-{index}"
        body = json.dumps({"model": "t5-tiny", "prompt": "a" * row["input_length"],
                           "max_tokens": row["output_length"], "stream": True}).encode()
        ask = urllib.request.Request(f"http://127.0.0.1:{port}/v1/completions", data=body,
                                     headers={"Content-Type": "application/json",
                                              "X-Request-Id": request_id})
        first, chunks, start = None, 0, time.perf_counter()
        with urllib.request.urlopen(ask, timeout=300) as reply:
            for raw in reply:
                if not raw.startswith(b"data: "):
                    continue
                first = first or time.perf_counter()
                if raw.strip() == b"data: [DONE]":
                    break
                chunks += 1
        end = time.perf_counter()
        requests.append(PeerRequest(request_id, start, (end - start) * 1e3,
                                    None if first is None else (first - start) * 1e3, None,
                                    row["input_length"], max(chunks - 1, 0)))
    meanings = {"latency_ms": "sent → data: [DONE] read", "ttft_ms": "sent → first SSE chunk",
                "tpot_ms": "not measured"}
    return PeerFile("sequential urllib", None, "this script", "t5-tiny",
                    (PeerRun("sequential", tuple(requests)),), meanings, per_request=True)


def _report(argv: list[str] | None, bin_dir: Path, args: argparse.Namespace,
            table: str) -> str:
    versions = {name: subprocess.run([str(bin_dir / name), "--version"], capture_output=True,
                                     text=True, check=False).stdout.split()[-1:]
                for name in PEERS}      # "0.13.0", "guidellm version: 0.8.1": the last word
    command = shlex.join(["python", "-m", "tools.peer_check", *(argv or sys.argv[1:])])
    return "\n".join([
        f"command: `{command}`", "",
        f"machine: {_cpu()}, {os.cpu_count()} cores, {platform.system()} "
        f"{platform.release()}, Python {platform.python_version()}",
        "peers: " + ", ".join(f"{name} {' '.join(v) or '?'}" for name, v in versions.items()),
        f"server: infertop serve --model t5-tiny --drift-every 0 "
        f"{' '.join('--opt ' + o for o in (args.opt or ['batching=continuous']))}; trace: "
        f"azure-conv's first {args.requests} requests, inputs ≤ {args.max_input}, outputs ≤ "
        f"{args.max_output} tokens", "", table, ""])


def _cpu() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "?"


if __name__ == "__main__":
    sys.exit(main())
