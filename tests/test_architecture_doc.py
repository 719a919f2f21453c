"""docs/architecture.md is a reference a newcomer can trust: its layer picture is the layers
the import test holds, every path it names exists, and every name in the glossary's "in the
code" column (and the class or function names its meaning names) is defined where it says."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from test_layers_run_down import LAYERS

REPO = Path(__file__).resolve().parents[1]
DOC = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")


def _section(title: str) -> str:
    start = DOC.index(f"## {title}")
    end = DOC.find("\n## ", start + 1)
    return DOC[start:end if end >= 0 else None]


def _picture_packages() -> list[str]:
    """The packages the layer picture lists, top to bottom (`probe/engine/` → probe.engine)."""
    picture = _section("The layers").split("```")[1]
    packages = []
    for line in picture.splitlines():
        if line[:1].isspace():
            continue                # a line that goes on describing the package above
        for word in line.split():
            if not re.fullmatch(r"[a-z_]+(/[a-z_]+)*/", word):
                break
            packages.append(word.strip("/").replace("/", "."))
    return packages


def test_the_layer_picture_is_the_tests_layers_in_their_order() -> None:
    layered = [package for layer in LAYERS for package in layer if package != "probe"]
    assert _picture_packages() == layered


def test_every_path_the_page_names_exists() -> None:
    paths = set(re.findall(r"`((?:probe|tui|workloads|infertop|tests|docs)/[\w/.-]*)`", DOC))
    paths |= {f"docs/{name}" for name in re.findall(r"\bdocs/([\w-]+\.md)\b", DOC)}
    missing = sorted(p for p in paths if "NAME" not in p and "eN_" not in p
                     and not (REPO / p.split("::")[0]).exists())
    assert not missing, missing


def test_every_test_the_page_names_exists() -> None:
    named = re.findall(r"`(tests/[\w/]+\.py)::(\w+)`", DOC)
    assert len(named) >= 5
    assert [f"{p}::{t}" for p, t in named if t not in _defined(REPO / p)] == []


def _defined(path: Path) -> set[str]:
    names: set[str] = set()
    for file in ([path] if path.is_file() else sorted(path.rglob("*.py"))):
        for node in ast.parse(file.read_text(encoding="utf-8")).body:
            if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                names.add(node.name)
            if isinstance(node, ast.ClassDef):      # a method names the class's work too
                names |= {n.name for n in node.body if isinstance(n, ast.FunctionDef)}
            elif isinstance(node, (ast.Assign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                names |= {t.id for t in targets if isinstance(t, ast.Name)}
    return names


def glossary_problems() -> list[str]:
    problems = []
    rows = [line for line in _section("Glossary").splitlines() if line.startswith("| **")]
    assert len(rows) >= 30, "the glossary's rows were not found"
    for row in rows:
        word, meaning, code = (cell.strip() for cell in row.strip("|").split("|")[:3])
        places = [REPO / p for p in re.findall(r"`([\w/.-]+\.py|[\w/.-]+/)`", code)]
        if not places:
            problems.append(f"{word}: names no module")
            continue
        problems += [f"{word}: {p.relative_to(REPO)} does not exist" for p in places
                     if not p.exists()]
        defined = set().union(*(_defined(p) for p in places if p.exists() and
                                (p.suffix == ".py" or p.is_dir())))
        named = re.findall(r"`([A-Za-z_][A-Za-z0-9_]*)(?:\(\))?`", meaning)
        for name in named:
            looks_like_code = name[0].isupper() or "_" in name or name.endswith("()")
            if looks_like_code and name not in defined and name not in ("config_id",):
                problems.append(f"{word}: `{name}` is not defined in {code}")
    return problems


def test_every_glossary_name_is_defined_where_it_says() -> None:
    problems = glossary_problems()
    assert not problems, "\n".join(problems)


LIBRARIES = ("probe/contract", "probe/analysis", "probe/session_store", "probe/runs")


def test_every_package_says_what_it_holds_and_the_libraries_what_they_export() -> None:
    """architecture.md promises that each package's __init__ says what it holds; the packages
    others import from also name what they export, and each exported module exists."""
    packages = sorted(p.parent for root in ("infertop", "probe", "tui", "workloads", "tools")
                      for p in (REPO / root).rglob("__init__.py"))
    silent = [str(p.relative_to(REPO)) for p in packages
              if not ast.get_docstring(ast.parse((p / "__init__.py").read_text()))]
    assert silent == []
    for library in LIBRARIES:
        doc = ast.get_docstring(ast.parse((REPO / library / "__init__.py").read_text())) or ""
        assert "Exports" in doc, library
        named = re.findall(r"`([a-z_]+)`\s+\(([^)]*)\)", doc.split("Exports", 1)[1])
        assert named, library
        missing = [m for m, _ in named if not (REPO / library / f"{m}.py").exists()]
        assert missing == [], (library, missing)
        assert export_problems(library, named) == []


def export_problems(library: str, named: list[tuple[str, str]]) -> list[str]:
    """Each module's parenthesis names what it exports, `(name, name: what they are)`: every
    name before the colon is defined in that module, so the face cannot go stale."""
    problems = []
    for module, inside in named:
        names = [n.strip() for n in inside.split(":", 1)[0].split(",")]
        defined = _defined(REPO / library / f"{module}.py")
        problems += [f"{library}/{module}.py: {n!r} is not defined there" for n in names
                     if not n.isidentifier() or n not in defined]
    return problems


def test_an_export_the_module_does_not_define_is_named() -> None:
    assert export_problems("probe/analysis", [("stats", "session_segments, gone: prose"),
                                              ("slo", "the goodput")]) == [
        "probe/analysis/stats.py: 'gone' is not defined there",
        "probe/analysis/slo.py: 'the goodput' is not defined there"]
