"""`infertop serve --ray 2`: the same app as a Ray Serve deployment of two t5-tiny replicas
(eager, one thread each) behind Serve's proxy on a free loopback port, spoken to with the
official `openai` client. Both replicas answer (each names itself in X-Infertop-Replica), every
usage is right, and SIGTERM saves one session a replica holding exactly the requests it
answered, then exits 143. Starts Ray: one file at a time (RAY_FILES in conftest.py)."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

pytest.importorskip("ray.serve", reason="Ray Serve is not installed: pip install "
                                        "'infertop[serve-ray]'")
openai = pytest.importorskip("openai")

REPO = Path(__file__).resolve().parents[2]
MODEL = "t5-tiny"
PROMPT = "translate English to German: the house is small"
MAX_TOKENS = 4
pytestmark = pytest.mark.timeout(400)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _ready(url: str, child: subprocess.Popen, lines: list[str], seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if child.poll() is not None:
            said = "".join(lines)
            if "cannot start Ray on this machine" in said:
                pytest.skip(f"Ray cannot start here: {said.strip()}")
            pytest.fail(f"the server ended ({child.returncode}) before it was ready: {said}")
        try:
            with urllib.request.urlopen(url + "/health", timeout=5) as response:
                if json.load(response)["status"] == "ready":
                    return
        except OSError:     # refused before the proxy listens, 503 while any replica warms
            pass
        time.sleep(0.5)
    child.kill()
    pytest.fail(f"not ready within {seconds:g} s: {''.join(lines)}")


def test_two_replicas_both_serve_and_each_saves_its_session(tmp_path):
    out = tmp_path / "served.json"
    port = _free_port()
    command = [sys.executable, "-m", "infertop", "serve", "--ray", "2", "--model", MODEL,
               "--device", "cpu", "--opt", "batching=continuous", "--max-input", "64",
               "--max-output", "16", "--drift-every", "0", "--threads", "1",
               "--port", str(port), "--drain-s", "20", "--out", str(out)]
    child = subprocess.Popen(command, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    lines: list[str] = []
    threading.Thread(target=lambda: lines.extend(child.stderr or ()), daemon=True).start()
    url = f"http://127.0.0.1:{port}"
    try:
        _ready(url, child, lines, 240)
        client = openai.OpenAI(base_url=url + "/v1", api_key="unused", max_retries=0,
                               timeout=120)

        def complete(request_id: str):
            raw = client.completions.with_raw_response.create(
                model=MODEL, prompt=PROMPT, max_tokens=MAX_TOKENS,
                extra_headers={"X-Request-Id": request_id})
            return request_id, raw.headers["x-infertop-replica"], raw.parse()

        answered: dict[str, tuple[str, object]] = {}
        # at once, so Serve's router (the less busy of two replicas) gives each some; a few
        # more rounds only if one replica happened to take them all
        for round_ in range(4):
            with ThreadPoolExecutor(6) as pool:
                for request_id, replica, completion in pool.map(
                        complete, [f"ray-{round_}-{i}" for i in range(6)]):
                    assert completion.id == request_id
                    answered[request_id] = (replica, completion.usage)
            if {replica for replica, _ in answered.values()} == {"r0", "r1"}:
                break
        replicas = {replica for replica, _ in answered.values()}
        assert replicas == {"r0", "r1"}, f"only {replicas} answered {len(answered)} requests"
        prompt_tokens = {usage.prompt_tokens for _, usage in answered.values()}
        assert len(prompt_tokens) == 1 and prompt_tokens.pop() > 0    # one prompt, one count
        assert all(usage.completion_tokens == MAX_TOKENS
                   and usage.total_tokens == usage.prompt_tokens + MAX_TOKENS
                   for _, usage in answered.values())

        child.send_signal(signal.SIGTERM)
        stdout, _ = child.communicate(timeout=180)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert child.returncode == 128 + signal.SIGTERM, "".join(lines)
    assert not out.exists()     # one session a replica, not a merged one
    for replica in ("r0", "r1"):
        saved = tmp_path / f"served.{replica}.json"
        records = {r["id"]: r for r in json.loads(saved.read_text())["requests"]}
        mine = {request_id for request_id, (by, _) in answered.items() if by == replica}
        assert set(records) == mine, replica        # what it answered, nothing else
        for request_id in mine:
            usage = answered[request_id][1]
            assert records[request_id]["output_tokens"] == usage.completion_tokens
            assert records[request_id]["input_tokens"] == usage.prompt_tokens
        assert f"{len(mine)} requests saved to {saved}" in stdout
    # only infertop speaks on the terminal: Ray's and Serve's lines go to the engine log
    assert all(re.match(r"infertop", line) for line in lines if line.strip()), lines
