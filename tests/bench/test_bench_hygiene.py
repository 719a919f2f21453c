"""The bench and the snapshot reports are library code: importing them loads no UI."""

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

CODE = """
import importlib, pkgutil, sys
import probe.bench
for module in pkgutil.walk_packages(probe.bench.__path__, "probe.bench."):
    importlib.import_module(module.name)
importlib.import_module("probe.snapshot_report")
print(",".join(sorted(m for m in sys.modules if m.split(".")[0] in {"textual", "tui"})))
"""


def test_importing_the_bench_loads_no_ui() -> None:
    done = subprocess.run([sys.executable, "-c", CODE], cwd=REPO, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == ""
