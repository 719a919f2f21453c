"""Only infertop speaks on the terminal: a compiled `replay` (dynamo's graph breaks and its
warnings about lru_cache, torchao's import, transformers) leaves on stderr only infertop's own
lines, and what torch said is in the engine log instead of lost."""

from __future__ import annotations

import logging
import os
import re
import shutil
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path

import pytest

from probe.engine.process.third_party_output import third_party_output_to

REPO = Path(__file__).resolve().parents[2]
# What infertop itself writes on stderr during a replay: the fit summary, a progress line per
# request and a line for each fallback (dynamo's recompile limit on HF generate()).
OWN_LINE = re.compile(r"^(fit to the model .*|session journal: .*|  (inputs|outputs): .*"
                      r"|\[\d+/\d+ served.*\] \S+ config=c\d+ in=.*|fallback: .*)$")
THIRD_PARTY = re.compile(r"torch|dynamo|inductor|torchao|Warning|site-packages|^[WEIF]\d{4} ")


@pytest.mark.slow
def test_a_compiled_replays_stderr_holds_only_infertops_lines(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(REPO), "XDG_STATE_HOME": str(tmp_path / "state"),
           "TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "inductor")}
    done = subprocess.run(     # dynamo's eager backend: no inductor compile, still graph breaks
        [sys.executable, "-m", "infertop", "replay", "--model", "t5-tiny", "--opt",
         "compile=default", "--compile-backend", "eager", "--requests", "4", "--speed", "1000",
         "--max-output", "6", "--threads", "1", "--out", str(tmp_path / "s.json")],
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


def test_infertops_signal_line_reaches_the_terminal_not_the_log(tmp_path, capfd):
    """A signal handler's line (os.write, for signal safety) is infertop's own: with descriptor
    2 pointed at the log it goes to `sys.stderr`'s descriptor, the terminal's."""
    from probe.checks.interrupts import say
    log_path = tmp_path / "engine.log"
    with third_party_output_to(str(log_path)):
        say("infertop: SIGTERM: finishing the request in progress")
    assert "SIGTERM" in capfd.readouterr().err
    assert "SIGTERM" not in log_path.read_text()


def test_a_logger_with_a_handler_of_its_own_goes_to_the_log_and_gets_it_back(tmp_path, capfd):
    """Ray gives its `ray` logger a handler on the stderr of the moment it is imported (its
    "Token authentication is enabled" warning at ray.init comes through it): for the
    duration only the log hears it, and the handler is put back after."""
    log_path = tmp_path / "engine.log"
    ray_logger = logging.getLogger("ray")
    own = logging.StreamHandler(sys.stderr)
    ray_logger.addHandler(own)
    try:
        with third_party_output_to(str(log_path)):
            logging.getLogger("ray._private.authentication").warning(
                "Token authentication is enabled for this Ray cluster")
        assert own in ray_logger.handlers
    finally:
        ray_logger.removeHandler(own)
    assert "Token authentication" in log_path.read_text()
    assert "Token authentication" not in capfd.readouterr().err


# `tune --ray local` up to the moment its cluster is joined (a real local Ray: ray.init prints
# the token warning there), then it leaves: what a user's terminal shows of Ray.
TUNE_RAY = """
import sys
import probe.tune.runner as runner
def joined(args, baseline):
    import threading
    from pathlib import Path
    from probe.runs.runs import RunContext
    from probe.tune.ray_pool import RayPool
    context = RunContext(model=args.model, device="cpu", loaded=None, max_input=512, repeats=1)
    steps = RayPool.connect(args.ray, args.device, context, args.trace, 1, Path("."),
                            threading.Event(), runner.say)
    steps.close()
    return 0
runner.run_tune_command = joined
from infertop.cli import main
sys.exit(main(sys.argv[1:]))
"""


def test_tune_ray_keeps_rays_token_warning_off_the_terminal(tmp_path):
    pytest.importorskip("ray")
    home = Path(tempfile.mkdtemp(prefix="ray", dir="/tmp"))    # Ray's socket paths are short
    env = {key: value for key, value in os.environ.items()
           if key not in ("RAY_ADDRESS", "RAY_AUTH_MODE")}
    env.update(PYTHONPATH=str(REPO), XDG_STATE_HOME=str(tmp_path / "state"), HOME=str(home),
               RAY_TMPDIR=str(home))
    done = subprocess.run(
        [sys.executable, "-c", TUNE_RAY, "tune", "--ray", "local", "--model", "t5-tiny",
         "--device", "cpu", "--slo", "latency=1s", "--rate", "1", "--out",
         str(tmp_path / "out")],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    shutil.rmtree(home, ignore_errors=True)
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    assert lines and all(line.startswith("tune: ") for line in lines), done.stderr
    (log,) = (tmp_path / "state" / "infertop").glob("engine-*.log")
    assert "Token authentication" in log.read_text()


# -- infertop's own log records are for the log (issue 50) -------------------------------------

def test_a_charts_glyph_warning_never_reaches_stderr_outside_any_log():
    """No handler configured (a plain command): logging's last resort would print it."""
    script = ("import warnings\n"
              "from probe.report_charts.canvas import warnings_to_log\n"
              "with warnings_to_log('chart x'):\n"
              "    warnings.warn('Glyph 27 (\\x1b) missing from font(s) DejaVu Sans.')\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=120)
    assert done.returncode == 0 and done.stderr == ""


def test_in_a_headless_command_the_projects_records_go_to_the_engine_log(tmp_path, capfd):
    import logging
    log = tmp_path / "engine.log"
    with third_party_output_to(str(log)):
        logging.getLogger("probe.report_charts.canvas").warning("chart x: Glyph 27 missing")
    assert "Glyph 27" not in capfd.readouterr().err
    assert "chart x: Glyph 27 missing" in log.read_text()
