"""`infertop serve` measured from a client, on one machine, in one run (t5-tiny on the CPU by
default); prints ratios, each from this run's own numbers:

1. Continuous batching behind HTTP against the server a user writes first: HF `generate()`
   behind one lock, in the same ASGI app (probe/server/app.py over a seam implementation of
   its own, below). Tokens/s at full load (a closed loop of --concurrency clients), then
   tokens/s and p95 latency at the same offered load (an open loop at --load × the lock
   server's full-load rate).
2. HTTP's own cost: one trace (prompts as text) replayed in process (`infertop replay`) and
   through the server at the trace's times (p50/p95 of the latency each measures), and per
   request, the client's latency minus the server's record of it (joined by X-Request-Id).

    PYTHONPATH=$PWD python benchmarks/serve_http.py [--model t5-tiny] [--requests 48]
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
MAX_INPUT = MAX_OUTPUT = 64


# -- the lock server: HF generate() behind one lock, in the same app ----------------------------
class GenerateEngine:
    """A ServedEngine (probe/server/seam.py) that answers each request with HF `generate()`,
    one at a time: what a first server does."""

    def __init__(self, model: str, threads: int) -> None:
        import torch

        from probe.engine.model.loading import load_model
        from probe.server.seam import Limits
        torch.set_num_threads(threads)
        self.loaded = load_model(model)
        self.limits = Limits(model=model, max_prompt_tokens=MAX_INPUT, max_tokens=MAX_OUTPUT,
                             max_queue=100_000)
        self.state = "ready"
        self._lock = threading.Lock()
        self._flying: set[str] = set()

    def count_prompt(self, prompt: str) -> int:
        return len(self.loaded.tokenizer(prompt, add_special_tokens=False).input_ids)

    def submit(self, ask, listener) -> None:
        self._flying.add(ask.request_id)
        threading.Thread(target=self._answer, args=(ask, listener), daemon=True).start()

    def _answer(self, ask, listener) -> None:
        import torch

        from probe.server.seam import Done
        arrival = time.perf_counter()
        ids = self.loaded.tokenizer(ask.prompt, add_special_tokens=False,
                                    return_tensors="pt").input_ids[:, :MAX_INPUT]
        with self._lock, torch.inference_mode():
            start = time.perf_counter()
            out = self.loaded.model.generate(ids, max_new_tokens=ask.max_tokens,
                                             min_new_tokens=ask.max_tokens, do_sample=False)
        end = time.perf_counter()
        tokens = tuple(int(t) for t in out[0, 1:])
        self._flying.discard(ask.request_id)
        listener(Done(_record(ask.request_id, ids.shape[1], tokens, arrival, start, end)))

    def cancel(self, request_id: str, why: str | None = None) -> None:
        pass

    def decode(self, ids) -> str:
        return self.loaded.tokenizer.decode(list(ids), skip_special_tokens=True)

    def metrics(self) -> bytes:
        return b""

    def in_flight(self, request_id: str) -> bool:
        return request_id in self._flying


def _record(request_id: str, n_in: int, tokens: tuple[int, ...], arrival: float, start: float,
            end: float):
    from probe.contract.records import RequestRecord
    return RequestRecord(id=request_id, seq=0, config_id="generate", input_tokens=n_in,
                         padded_tokens=n_in, output_tokens=len(tokens), arrival_s=arrival,
                         start_s=start, first_token_s=None, end_s=end,
                         queue_ms=(start - arrival) * 1e3, compile_stall_ms=0.0,
                         encoder_ms=0.0, decoder_ms=(end - start) * 1e3, ttft_ms=None,
                         tpot_ms=None, latency_ms=(end - arrival) * 1e3, kv_cache_bytes=0,
                         kv_cache_used_bytes=0, kv_self_attention_bytes=0,
                         kv_cross_attention_bytes=0, tokens=tokens)


def run_lock_server(model: str, threads: int) -> None:
    import uvicorn

    from probe.server.app import make_app
    engine = GenerateEngine(model, threads)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    print(f"listening http://127.0.0.1:{sock.getsockname()[1]}/v1", file=sys.stderr,
          flush=True)
    uvicorn.Server(uvicorn.Config(make_app(engine), log_config=None, access_log=False,
                                  lifespan="off")).run(sockets=[sock])


# -- the client ------------------------------------------------------------------------------
class Client:
    def __init__(self, port: int, model: str) -> None:
        self.port, self.model = port, model

    def complete(self, request_id: str, prompt: str, max_tokens: int) -> tuple[float, int]:
        """Latency in ms (sent → whole reply read) and the completion's tokens."""
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=600)
        body = json.dumps({"model": self.model, "prompt": prompt, "max_tokens": max_tokens})
        started = time.perf_counter()
        connection.request("POST", "/v1/completions", body=body, headers={
            "Content-Type": "application/json", "X-Request-Id": request_id})
        response = connection.getresponse()
        reply = json.loads(response.read())
        elapsed = (time.perf_counter() - started) * 1e3
        connection.close()
        if response.status != 200:
            raise RuntimeError(f"{request_id}: {response.status} {reply}")
        return elapsed, reply["usage"]["completion_tokens"]


def closed_loop(client: Client, work: list[tuple[str, int]], concurrency: int, tag: str):
    """Every request, `concurrency` at a time: tokens/s over the run, and the latencies."""
    started = time.perf_counter()
    with ThreadPoolExecutor(concurrency) as pool:
        results = list(pool.map(lambda item: client.complete(f"{tag}-{item[0]}", *item[1]),
                                enumerate(work)))
    wall = time.perf_counter() - started
    return sum(n for _, n in results) / wall, [ms for ms, _ in results], len(work) / wall


def open_loop(client: Client, work: list[tuple[str, int]], times_s: list[float], tag: str):
    """Each request sent at its time, whatever the server does."""
    results: list = [None] * len(work)

    def send(i: int) -> None:
        results[i] = client.complete(f"{tag}-{i}", *work[i])

    started = time.perf_counter()
    with ThreadPoolExecutor(256) as pool:
        for i, due in enumerate(times_s):
            time.sleep(max(0.0, started + due - time.perf_counter()))
            pool.submit(send, i)
    wall = time.perf_counter() - started
    return sum(n for _, n in results) / wall, [ms for ms, _ in results]


# -- the servers -----------------------------------------------------------------------------
def start(command: list[str]) -> tuple[subprocess.Popen, int]:
    child = subprocess.Popen(command, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    assert child.stderr is not None
    for line in child.stderr:
        found = re.search(r"http://127\.0\.0\.1:(\d+)/v1", line)
        if found:
            port = int(found[1])
            break
    else:
        raise SystemExit(f"{command[:4]}: exited {child.wait()} before listening")
    threading.Thread(target=lambda: [None for _ in child.stderr or ()], daemon=True).start()
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        try:
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            connection.request("GET", "/health")
            if connection.getresponse().status == 200:
                return child, port
        except OSError:
            pass
        time.sleep(0.2)
    raise SystemExit("a server was not ready within 300 s")


def workload(n: int, seed: int = 0) -> tuple[list[tuple[str, int]], list[float]]:
    """The built-in chat trace's first n requests, lengths cut to the limits, each prompt
    text of its input length (t5-tiny's tokenizer: about a token a character)."""
    rows = [json.loads(line) for line in (REPO / "workloads/builtin/chat.jsonl").open()][:n]
    rng = random.Random(seed)
    work = []
    for row in rows:
        length = min(row["input_length"], MAX_INPUT - 8)
        text = "".join(rng.choice("abcdefghij klmnopqrstuvwxyz") for _ in range(length)).strip()
        work.append((text or "a", min(row["output_length"], MAX_OUTPUT)))
    first = rows[0]["timestamp"]
    return work, [(row["timestamp"] - first) / 1e3 for row in rows]


def pct(values, q) -> float:
    return float(np.percentile(np.asarray(values, dtype=float), q))


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default="t5-tiny")
    parser.add_argument("--requests", type=int, default=48)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--threads", type=int, default=1,
                        help="torch threads of each server (default 1: two servers at 2 "
                             "threads on a shared 2-core box spend their steps waiting for "
                             "each other)")
    parser.add_argument("--load", type=float, default=0.8,
                        help="the open loop's rate, × the lock server's full-load req/s")
    parser.add_argument("--lock-server", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.lock_server:
        run_lock_server(args.model, args.threads)
        return 0
    folder = Path(tempfile.mkdtemp(prefix="serve-bench-"))
    work, times = workload(args.requests)
    py = sys.executable
    engine_flags = ["--model", args.model, "--device", "cpu", "--opt", "batching=continuous",
                    "--max-batch", str(args.concurrency), "--max-input", str(MAX_INPUT),
                    "--max-output", str(MAX_OUTPUT), "--drift-every", "0", "--threads",
                    str(args.threads)]
    served = folder / "served.json"
    cb, cb_port = start([py, "-m", "infertop", "serve", *engine_flags, "--port", "0",
                         "--max-queue", "100000", "--out", str(served)])
    lock, lock_port = start([py, __file__, "--lock-server", "--model", args.model,
                             "--threads", str(args.threads)])
    cb_client, lock_client = Client(cb_port, args.model), Client(lock_port, args.model)
    for client in (cb_client, lock_client):        # one request each before timing
        client.complete(f"warm-{client.port}", "hello", 4)
    print(f"{args.model}, CPU ({os.cpu_count()} cores, load average "
          f"{os.getloadavg()[0]:.1f}), {args.threads} torch threads each; {len(work)} requests "
          f"(chat trace lengths, cut to {MAX_INPUT}/{MAX_OUTPUT})")

    # 1. full load, then the same offered load
    cb_tps, cb_ms, _ = closed_loop(cb_client, work, args.concurrency, "full")
    lock_tps, lock_ms, lock_rps = closed_loop(lock_client, work, args.concurrency, "full")
    print(f"full load ({args.concurrency} clients): continuous {cb_tps:.0f} tokens/s, "
          f"generate()+lock {lock_tps:.0f} tokens/s: {cb_tps / lock_tps:.2f}x; p95 "
          f"{pct(cb_ms, 95):.0f} ms vs {pct(lock_ms, 95):.0f} ms")
    rate = args.load * lock_rps
    offered = [i / rate for i in range(len(work))]
    cb_tps, cb_ms = open_loop(cb_client, work, offered, "same")
    lock_tps, lock_ms = open_loop(lock_client, work, offered, "same")
    print(f"same offered load ({rate:.2f} req/s = {args.load:g} x the lock server's "
          f"capacity): tokens/s {cb_tps:.0f} vs {lock_tps:.0f} ({cb_tps / lock_tps:.2f}x); "
          f"p95 {pct(cb_ms, 95):.0f} ms vs {pct(lock_ms, 95):.0f} ms "
          f"({pct(lock_ms, 95) / pct(cb_ms, 95):.2f}x lower)")
    lock.send_signal(signal.SIGTERM)

    # 2. HTTP's own cost: the trace at its times, through the server and in process
    _, http_ms = open_loop(cb_client, work, times, "trace")
    cb.send_signal(signal.SIGTERM)
    cb.wait(timeout=600)
    records = {r["id"]: r for r in json.loads(served.read_text())["requests"]}
    added = [ms - records[f"trace-{i}"]["latency_ms"] for i, ms in enumerate(http_ms)]
    trace = folder / "trace.jsonl"
    trace.write_text("".join(json.dumps({"timestamp": round(t * 1e3, 3), "input_length":
                                         len(text), "output_length": n, "text": text,
                                         "id": f"trace-{i}"}) + "\n"
                             for i, ((text, n), t) in enumerate(zip(work, times))))
    in_process = folder / "in_process.json"
    subprocess.run([py, "-m", "infertop", "replay", *engine_flags, "--trace", str(trace),
                    "--out", str(in_process)], cwd=REPO, check=True, capture_output=True)
    local = [r["latency_ms"] for r in json.loads(in_process.read_text())["requests"]]
    for q in (50, 95):
        print(f"trace at its times, p{q}: in process {pct(local, q):.1f} ms, through HTTP "
              f"{pct(http_ms, q):.1f} ms ({pct(http_ms, q) - pct(local, q):+.1f} ms, "
              f"{pct(http_ms, q) / pct(local, q) - 1:+.1%})")
    print(f"per request, client latency - the server's record: p50 {pct(added, 50):.2f} ms, "
          f"p95 {pct(added, 95):.2f} ms, max {max(added):.2f} ms, min {min(added):.2f} ms")
    print(f"load average at the end {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
