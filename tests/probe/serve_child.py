"""A real `infertop serve` child for the tests that speak to one: started on a free loopback
port, read until /health says ready, killed at the end if still running."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, Sequence

import pytest

REPO = Path(__file__).resolve().parents[2]
READY_S = 180


@contextmanager
def serving(flags: Sequence[str]) -> Iterator[tuple[subprocess.Popen, int]]:
    """`infertop serve FLAGS --port 0`: the child and the port it chose, once ready."""
    command = [sys.executable, "-m", "infertop", "serve", *flags, "--port", "0"]
    child = subprocess.Popen(command, cwd=REPO, stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, text=True,
                             env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        assert child.stderr is not None
        port = None
        for line in child.stderr:
            found = re.search(r"http://127\.0\.0\.1:(\d+)/v1", line)
            if found:
                port = int(found[1])
                break
        assert port, "the server never said where it listens"
        # read on, so a full pipe never blocks the server
        threading.Thread(target=lambda: list(child.stderr or ()), daemon=True).start()
        _wait_ready(f"http://127.0.0.1:{port}")
        yield child, port
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()


def _wait_ready(url: str) -> None:
    deadline = time.monotonic() + READY_S
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url + "/health", timeout=5) as response:
                if json.load(response)["status"] == "ready":
                    return
        except OSError:     # 503 while warming, refused while loading
            time.sleep(0.2)
    pytest.fail(f"the server was not ready within {READY_S} s")
