"""Only infertop speaks on the terminal: a compiled `replay` (dynamo's graph breaks and its
warnings about lru_cache, torchao's import, transformers) leaves on stderr only infertop's own
lines, and what torch said is in the engine log instead of lost."""

from __future__ import annotations

import logging
import os
import re
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from probe.engine.process.third_party_output import third_party_output_to

REPO = Path(__file__).resolve().parents[2]
# The replay as `infertop replay` runs it, on dynamo's eager backend (no inductor compile:
# seconds, and dynamo still breaks graphs and warns).
REPLAY = """
import functools, sys
import probe.engine.process.headless as headless
headless.engine_for = functools.partial(headless.engine_for, compile_backend="eager")
from infertop.cli import main
sys.exit(main(sys.argv[1:]))
"""
# What infertop itself writes on stderr during a replay: the fit summary and a progress line
# per request.
OWN_LINE = re.compile(r"^(fit to the model .*|session journal: .*|  (inputs|outputs): .*|\s*\S+ c\d+ in=.*)$")
THIRD_PARTY = re.compile(r"torch|dynamo|inductor|torchao|Warning|site-packages|^[WEIF]\d{4} ")


@pytest.mark.slow
def test_a_compiled_replays_stderr_holds_only_infertops_lines(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(REPO), "XDG_STATE_HOME": str(tmp_path / "state"),
           "TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "inductor")}
    done = subprocess.run(
        [sys.executable, "-c", REPLAY, "replay", "--model", "t5-tiny", "--opt",
         "compile=default", "--requests", "4", "--speed", "1000", "--max-output", "6",
         "--threads", "1", "--out", str(tmp_path / "s.json")],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    assert lines, "the replay said nothing"
    strangers = [line for line in lines if not OWN_LINE.match(line)]
    assert not strangers, "\n".join(strangers)
    (log,) = (tmp_path / "state" / "infertop").glob("engine-*.log")
    said = log.read_text()
    assert "Graph break" in said or "graph break" in said.lower(), said[-2000:]


def test_warnings_loggers_and_descriptor_2_go_to_the_log_and_come_back(tmp_path, capfd):
    log_path = tmp_path / "engine.log"
    with third_party_output_to(str(log_path)):
        warnings.warn("a python warning", UserWarning, stacklevel=1)
        logging.getLogger("torchao").warning("Failed to load _C_mxfp8.so")
        logging.getLogger("torch._dynamo").warning("hit config.recompile_limit (8)")
        os.write(2, b"C++ says hello\n")
        print("infertop's own line", file=sys.stderr)
    said = log_path.read_text()
    for text in ("a python warning", "Failed to load _C_mxfp8.so",
                 "hit config.recompile_limit (8)", "C++ says hello"):
        assert text in said
    assert "infertop's own line" not in said
    os.write(2, b"after\n")
    out, err = capfd.readouterr()
    assert "infertop's own line" in err and "after" in err
    assert "C++ says hello" not in err and "a python warning" not in err
