"""docs/architecture.md's "Where to make a change", checked: for each kind of change the page
lists the files to touch, and each test here fails for a change that skipped one of them (an
option with no field or binding, an experiment file not registered, a finding the doctor never
calls, a panel never composed, an importer without its format). Torch-free."""

from __future__ import annotations

import ast
import importlib
from dataclasses import fields
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _source(path: str) -> str:
    return (REPO / path).read_text(encoding="utf-8")


def _called_names(path: str) -> set[str]:
    return {node.func.id for node in ast.walk(ast.parse(_source(path)))
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)}


def test_a_new_option_is_wired_where_the_page_says() -> None:
    """One Option in OPTIONS, its field in OptConfig, its key bound, its row in the README,
    and the function its `applied_by` names exists in that module."""
    from probe.contract.options import OPTIONS, OptConfig, markdown_table
    from tui.keys import KEYS

    assert [f.name for f in fields(OptConfig)] == [o.key for o in OPTIONS]
    bound = {binding.id for binding in KEYS}
    readme = _source("README.md")
    for option in OPTIONS:
        assert f"cycle-{option.key}" in bound, option.key
        row = next(line for line in markdown_table().splitlines()
                   if line.startswith(f"| `{option.key}` |"))
        assert row in readme, f"README's options table lacks {option.key}"
        for place in option.applied_by.split(";"):
            module_path, _, function = place.strip().partition(": ")
            names = {n.name for n in ast.walk(ast.parse(_source(module_path)))
                     if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
            assert function.split(".")[-1].split(" ")[0] in names, (option.key, place)


def test_every_experiment_module_is_registered_in_study_order() -> None:
    from probe.bench.experiment_ids import EXPERIMENT_IDS
    from probe.bench.experiments import EXPERIMENTS

    assert tuple(EXPERIMENTS) == EXPERIMENT_IDS
    registered = {module for module, source in _experiment_modules().items()
                  if "EXPERIMENT = " in source and f"{module.rsplit('.', 1)[1]}," in _source(
                      "probe/bench/experiments/__init__.py")}
    files = set(_experiment_modules())
    assert files == registered, files ^ registered
    doc = _source("docs/bench-and-experiments.md")
    assert [i for i in EXPERIMENT_IDS if f"`{i}`" not in doc and f"{i} " not in doc] == []


def _experiment_modules() -> dict[str, str]:
    return {f"probe.bench.experiments.{p.stem}": p.read_text(encoding="utf-8")
            for p in (REPO / "probe/bench/experiments").glob("*.py")
            if p.stem not in ("__init__", "base")}


def test_every_finding_is_called_by_the_doctor_and_documented() -> None:
    tree = ast.parse(_source("probe/analysis/findings.py"))
    makers = {node.name: call.args[0].value for node in tree.body
              if isinstance(node, ast.FunctionDef)
              for call in ast.walk(node) if isinstance(call, ast.Call)
              and isinstance(call.func, ast.Name) and call.func.id == "Finding"
              and call.args and isinstance(call.args[0], ast.Constant)}
    assert len(makers) >= 7
    called = _called_names("probe/analysis/diagnosis.py") | _called_names(
        "probe/analysis/doctor_live.py")
    assert sorted(set(makers) - called) == []
    doc = _source("docs/doctor.md")
    assert sorted(kind for kind in makers.values() if f"`{kind}`" not in doc) == []


def test_every_panel_is_composed_in_the_layout() -> None:
    panels = {node.name for path in (REPO / "tui/widgets").glob("*.py")
              for node in ast.parse(path.read_text(encoding="utf-8")).body
              if isinstance(node, ast.ClassDef)
              and any(ast.unparse(base) == "Panel" for base in node.bases)}
    assert len(panels) >= 7
    assert sorted(panels - _called_names("tui/dashboard_layout.py")) == []


def test_every_format_has_an_importer_and_its_docs() -> None:
    importers = importlib.import_module("workloads.importers")
    readers = {p.stem for p in (REPO / "workloads/importers").glob("*.py")
               if f"def read_{p.stem}(" in p.read_text(encoding="utf-8")}
    assert set(importers.FORMATS) == readers
    called = _called_names("workloads/importers/__init__.py")
    doc = _source("docs/workloads-and-traces.md").lower()
    for fmt in importers.FORMATS:
        assert f"read_{fmt}" in called and fmt in doc, fmt
