"""gpu-check stops as every command that runs an engine does (tools/gpu_check/stops.py),
planted (no GPU here): 128 + the signal, the finished sections kept, no scratch left."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

GPU_STUBBORN = """
import json, signal, sys, tempfile, time
from pathlib import Path
import tools.gpu_check.check as check

def stubborn(args):
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "gpu-check.json").write_text(json.dumps({"nvml": {"idle": "ok"}}))   # a section
    tempfile.mkdtemp(prefix="gpu-decode-")          # as the decode matrix makes its own
    print("planted: a section that cannot be cut short", file=sys.stderr, flush=True)
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM, signal.SIGHUP})
    while True:                 # a compile in C: no Python handler runs until it returns
        time.sleep(0.05)

check._check = stubborn
sys.argv = ["check", "--out", sys.argv[1]]
sys.exit(check.main())
"""


@pytest.mark.timeout(300)
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_gpu_check_stops_with_128_plus_the_signal_keeping_its_sections(tmp_path, signum):
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    out = tmp_path / "gpu-out"
    env = {**os.environ, "PYTHONPATH": str(REPO), "PYTHONUNBUFFERED": "1",
           "TMPDIR": str(temporary)}
    child = subprocess.Popen([sys.executable, "-c", GPU_STUBBORN, str(out)], env=env, text=True,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert child.stderr is not None
    for line in child.stderr:
        if "planted" in line:
            break
    child.send_signal(signum)
    _, err = child.communicate(timeout=120)
    assert child.returncode == 128 + signum, err
    report = json.loads((out / "gpu-check.json").read_text())
    assert report["nvml"] == {"idle": "ok"}
    assert report["stopped"] == f"interrupted by {signal.Signals(signum).name}"
    assert "holds the sections that finished" in err
    assert list(temporary.iterdir()) == []          # no scratch, no gpu-decode-* left
