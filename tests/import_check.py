"""Which packages an import pulls in, asked of a fresh interpreter (harlequin's import-hygiene
test): the contract, the workloads and the UI must each stay as light as they promise."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

_CODE = """
import importlib, json, pkgutil, sys
for name in {modules!r}:
    importlib.import_module(name)
for name in {packages!r}:
    package = importlib.import_module(name)
    for module in pkgutil.walk_packages(package.__path__, name + "."):
        importlib.import_module(module.name)
{then}
print(json.dumps(sorted({{m.split(".")[0] for m in sys.modules}})))
"""


def roots_loaded(*modules: str, packages: tuple[str, ...] = (), then: str = "") -> set[str]:
    """Top-level packages in sys.modules after importing `modules`, every module of each of
    `packages`, and running `then`."""
    code = _CODE.format(modules=modules, packages=packages, then=then)
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True,
                          text=True, timeout=180)
    assert done.returncode == 0, done.stderr
    return set(json.loads(done.stdout.strip().splitlines()[-1]))
