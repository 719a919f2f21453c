"""Which layer a test belongs to, read from its file and fixtures without importing it. Every
test gets exactly one layer mark (tests/conftest.py), and `pytest -m LAYER` runs that lane:

- `pure`: synthetic records and values; no engine, no compile, no dashboard, no child
  interpreter. The fast lane `make check` runs.
- `layout`: the dashboard's SVG layout snapshots (pytest-textual-snapshot's `snap_compare`).
- `pilot`: the dashboard driven through Textual's Pilot (tests/tui/), against a fake engine or
  an engine process that never loads a model.
- `engine`: everything else: a t5-tiny engine, a compile, the CLI, a bench, a child interpreter.

`make test` runs every lane."""

from __future__ import annotations

import ast
from functools import lru_cache
from pathlib import Path

# A file that imports any of these (or a module under them) starts an engine, loads torch's
# models, drives the dashboard or spawns interpreters: not pure.
HEAVY_IMPORTS = ("torch", "transformers", "textual", "probe.engine", "probe.runs.runs",
                 "probe.bench.runner", "probe.bench.study", "probe.bench.ray_executor", "ray",
                 "tui.app", "tui.launch", "engine_targets", "import_check", "subprocess",
                 "multiprocessing", "infertop.cli", "tests.engine_targets", "tests.import_check",
                 "tools.report_look",     # headless Chromium
                 "tools.gpu_check",       # runs engines and GPU sections
                 "probe.checks.stop_supervisor")  # forks the command into a child
# Fixtures that start an engine or a dashboard, or run the CLI.
HEAVY_FIXTURES = frozenset({"make_engine", "make_app", "read_screen", "until", "gil_hog",
                            "snap_compare", "cli"})
# The dashboard's own tests (and the only folder whose conftest serves make_app and the like).
DASHBOARD_TESTS = Path(__file__).resolve().parent / "tui"
LAYERS = ("pure", "layout", "pilot", "engine")


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


def layer_of(path: Path, fixtures: list[str], slow: bool) -> str:
    if is_pure(path, fixtures, slow):
        return "pure"
    if "snap_compare" in fixtures:
        return "layout"
    if path.resolve().is_relative_to(DASHBOARD_TESTS):
        return "pilot"
    return "engine"


def may_hold(path: Path, lane: str) -> bool:
    """Whether a test file can hold a test of `lane`, without importing it: a lane's run then
    never imports (and pays for) the files of the others, torch's above all."""
    in_dashboard = path.resolve().is_relative_to(DASHBOARD_TESTS)
    if lane == "pure":
        return file_is_light(path)
    if lane in ("pilot", "layout"):
        return in_dashboard
    if lane == "engine":
        return not in_dashboard
    return True
