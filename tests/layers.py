"""Which layer a test belongs to, read from its file without importing it: `pure` tests work on
synthetic records and values (no engine, no compile, no dashboard, no child interpreter), and
are the fast lane `make check` runs (`pytest -m pure`). Everything else is the full suite."""

from __future__ import annotations

import ast
from functools import lru_cache
from pathlib import Path

# A file that imports any of these (or a module under them) starts an engine, loads torch's
# models, drives the dashboard or spawns interpreters: not pure.
HEAVY_IMPORTS = ("torch", "transformers", "textual", "probe.engine", "probe.bench.runs",
                 "probe.bench.runner", "probe.bench.study", "probe.bench.ray_executor", "ray",
                 "tui.app", "tui.launch", "engine_targets", "import_check", "subprocess",
                 "multiprocessing", "infertop.cli")
# Fixtures that start an engine or a dashboard, or run the CLI.
HEAVY_FIXTURES = frozenset({"make_engine", "make_app", "read_screen", "until", "gil_hog",
                            "snap_compare", "cli"})


@lru_cache(maxsize=None)
def file_is_light(path: Path) -> bool:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names = [node.module]
        else:
            continue
        if any(name == heavy or name.startswith(heavy + ".")
               for name in names for heavy in HEAVY_IMPORTS):
            return False
    return True


def is_pure(path: Path, fixtures: list[str], slow: bool) -> bool:
    return not slow and file_is_light(path) and not HEAVY_FIXTURES.intersection(fixtures)
