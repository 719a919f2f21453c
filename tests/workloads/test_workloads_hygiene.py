"""workloads/ is a library: importing all of it must not pull in the UI, the engine or torch."""

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

CODE = """
import importlib, pkgutil, sys
import workloads
for module in pkgutil.walk_packages(workloads.__path__, "workloads."):
    importlib.import_module(module.name)
bad = sorted(m for m in sys.modules if m.split(".")[0] in {"textual", "tui", "probe", "torch", "transformers"})
print(",".join(bad))
"""


def test_importing_workloads_loads_no_ui_engine_or_torch() -> None:
    done = subprocess.run([sys.executable, "-c", CODE], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == ""
