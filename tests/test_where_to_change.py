"""docs/architecture.md's "Where to make a change", checked: for each kind of change the page
lists the files to touch, and each test here fails for a change that skipped one of them (an
option with no field or binding, an experiment file not registered, a finding the doctor never
calls, a panel never composed, an importer without its format). Torch-free."""

from __future__ import annotations

import ast
import importlib
import re
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
    """REGISTRY, the one list, names every module of the package once, each module's
    EXPERIMENT carries the id the list gives it, and the docs name every id."""
    from probe.bench.experiments import EXPERIMENTS, REGISTRY

    files = {p.stem for p in (REPO / "probe/bench/experiments").glob("*.py")
             if p.stem not in ("__init__", "base")}
    assert sorted(module for _, module in REGISTRY) == sorted(files)
    assert [EXPERIMENTS[name].template.id for name in EXPERIMENTS] == [i for i, _ in REGISTRY]
    doc = _source("docs/bench-and-experiments.md")
    assert [i for i in EXPERIMENTS if f"`{i}`" not in doc and f"{i} " not in doc] == []



def test_nothing_below_bench_names_an_experiment() -> None:
    """An experiment's run, section and charts are its module's: probe/runs/ and
    probe/report_charts/ hold no experiment's id in their code or strings (a docstring may
    give one as an example)."""
    from probe.bench.experiments import REGISTRY

    ids = {i for i, _ in REGISTRY}
    named = []
    for folder in ("probe/runs", "probe/report_charts"):
        for path in sorted((REPO / folder).glob("*.py")):
            tree = ast.parse(path.read_text())
            docs = {id(n.body[0].value) for n in ast.walk(tree)
                    if isinstance(n, (ast.Module, ast.FunctionDef, ast.ClassDef))
                    and n.body and isinstance(n.body[0], ast.Expr)}
            for node in ast.walk(tree):
                if isinstance(node, ast.Constant) and isinstance(node.value, str) \
                        and id(node) not in docs:
                    words = set(re.findall(r"\bE\d+\b", node.value))
                    named += [f"{path.name}:{node.lineno} {w}" for w in words & ids]
                elif isinstance(node, ast.Name | ast.FunctionDef) and re.match(
                        r"e\d+_", getattr(node, "id", getattr(node, "name", ""))):
                    named.append(f"{path.name}:{node.lineno}")
    assert named == []

SYNTHETIC = '''"""E9: a synthetic experiment, written by the test: one eager run and its section."""
from probe.bench.experiments.base import HF_EAGER, Experiment, Template, served

TEMPLATE = Template("E9", "Synthetic", hypothesis="h", variable="v", control="c", expected="e")
left_out = TEMPLATE.when_quick("--quick leaves out nothing real; run without --quick for it")


def runs(plan):
    return {"eager": plan.spec(HF_EAGER)}


def build(plan, results, env):
    return TEMPLATE.section(table={"columns": ["served"], "rows": [[str(served(results["eager"]))]]},
                            observed=["synthetic"], root_cause=["none"], notes=list(left_out(plan)))


def checks(section):
    return {"e9_ok": section["table"]["rows"] == [["False"]]}


def figures(charts):
    return [charts.cdf]


EXPERIMENT = Experiment(TEMPLATE, runs, build, checks, left_out=left_out, figures=figures)
'''


def test_a_new_experiment_is_one_file_plus_its_line_in_the_list(tmp_path, monkeypatch) -> None:
    """A module written beside the package's and one line added to REGISTRY: the study plans
    its run, and the report carries its section, check, --quick note and figures, with no
    other edit. (Its run fails here: no engine is started.)"""
    import sys

    import probe.bench.experiments as experiments

    package = tmp_path / "package"
    package.mkdir()
    (package / "e9_synthetic.py").write_text(SYNTHETIC, encoding="utf-8")
    monkeypatch.setattr(experiments, "__path__", [*experiments.__path__, str(package)])
    monkeypatch.setattr(experiments, "REGISTRY", (*experiments.REGISTRY, ("E9", "e9_synthetic")))
    try:
        _plan_and_report_e9(tmp_path)
    finally:
        sys.modules.pop("probe.bench.experiments.e9_synthetic", None)


def _plan_and_report_e9(tmp_path) -> None:
    import json

    import probe.bench.experiments as experiments
    from probe.bench.report import report_document, write_report
    from probe.bench.study_setup import prepare_study
    from probe.report_charts.bench_figures import bench_charts
    from probe.runs.plan import BenchSettings
    from probe.runs.results import FailedRun

    assert experiments.select_experiments(None)[-1] == "E9"
    chosen = experiments.select_experiments("e9")
    out = tmp_path / "out"
    settings = BenchSettings(model="t5-tiny", trace="chat", device="cpu", out=out,
                             experiments=chosen, quick=True, requests=3, repeats=1)
    study = prepare_study(settings, "cpu", None)
    assert [study.describe(unit)[0] for unit in study.units] == ["E9"]
    (key,) = study.runs
    study.results[key] = FailedRun(key, study.runs[key].spec.options.label(), "no engine", "")
    report = report_document(settings, study.plan, {"device": "cpu"}, study,
                             interrupted=False, wall_s=1.0, torch_trace=None, tlparse=None)
    out.mkdir()
    write_report(out, report)
    written = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert written["checks"] == {"e9_ok": True}
    assert written["left_out"] == ["E9: --quick leaves out nothing real; run without --quick for it"]
    assert written["experiments"]["E9"]["notes"] == written["left_out"]
    assert "Synthetic" in (out / "report.md").read_text(encoding="utf-8")
    drawn = bench_charts(out, report, {"E9": experiments.EXPERIMENTS["E9"].figures})
    assert [sid for sid, _ in drawn] == ["E9"]


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
