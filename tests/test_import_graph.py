"""No import cycles among the product's modules, function-local imports included: a cycle
hidden inside a function still ties the two modules together (neither can be read, tested or
moved alone), so it is fixed in the dependency, not hidden."""

from __future__ import annotations

import import_graph
from import_graph import cycles
from import_graph import import_graph as graph_of


def test_the_product_has_no_import_cycle():
    found = cycles(graph_of())
    assert not found, "import cycles:\n" + "\n".join(" → ".join(c) for c in found)


def test_no_cycle_even_through_an_import_for_the_type_checker():
    """A module that needs another's type while that one imports it declares a Protocol of
    what it uses (probe/engine/session_swap.py's `Engine`) instead of importing it back."""
    found = cycles(graph_of(typing=True))
    assert not found, "import cycles:\n" + "\n".join(" → ".join(c) for c in found)


def test_a_cycle_through_a_function_local_import_is_found(tmp_path, monkeypatch):
    package = tmp_path / "probe"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from probe import b\n")
    (package / "b.py").write_text("def f():\n    from probe.c import x\n")
    (package / "c.py").write_text("import probe.a\nfrom typing import TYPE_CHECKING\n"
                                  "if TYPE_CHECKING:\n    from probe import b\n")
    (package / "d.py").write_text("from . import a\n")
    monkeypatch.setattr(import_graph, "PACKAGES", ("probe",))
    graph = graph_of(tmp_path)
    assert graph["probe.c"] == {"probe.a"}             # the TYPE_CHECKING import never runs
    assert graph["probe.d"] == {"probe.a"}             # relative import resolved
    assert cycles(graph) == [["probe.a", "probe.b", "probe.c", "probe.a"]]


def _runtime_import_names(path) -> set[str]:
    import ast
    names: set[str] = set()
    for node in import_graph._runtime_nodes(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module)
    return names


SEAM_FORBIDDEN = ("torch", "transformers", "torchao", "probe.engine", "probe.bench",
                  "probe.tune", "tui", "textual", "infertop")


def _imports_of_package_that_are(package: str, forbidden: tuple[str, ...],
                                  root=import_graph.REPO) -> dict[str, list[str]]:
    found = {}
    for name, path in import_graph.module_files(root).items():
        if name != package and not name.startswith(package + "."):
            continue
        wrong = sorted(n for n in _runtime_import_names(path)
                       if any(n == f or n.startswith(f + ".") for f in forbidden))
        if wrong:
            found[name] = wrong
    return found


def test_the_contract_imports_nothing_of_the_engine_and_no_torch_even_inside_a_function():
    """probe/contract is the seam between the dashboard and the engine: both sides read it,
    so it may lean on workloads, never on the engine, the bench, the UI or torch; nor on the
    session store, which is built on it."""
    wrong = _imports_of_package_that_are("probe.contract", (*SEAM_FORBIDDEN, "probe.session_store"))
    assert not wrong, wrong


def test_the_session_store_imports_nothing_of_the_engine_and_no_torch_even_inside_a_function():
    """probe/session_store (journal, snapshot files, export, printing) is read by the dashboard,
    the engine, the bench and the commands alike: held to the contract's rule."""
    assert import_graph.module_files().get("probe.session_store")
    wrong = _imports_of_package_that_are("probe.session_store", SEAM_FORBIDDEN)
    assert not wrong, wrong


def test_a_forbidden_import_inside_a_function_is_found(tmp_path, monkeypatch):
    package = tmp_path / "probe" / "session_store"
    package.mkdir(parents=True)
    (tmp_path / "probe" / "__init__.py").write_text("")
    (package / "__init__.py").write_text("")
    (package / "x.py").write_text("def f():\n    import torch\n    from probe.engine import y\n")
    monkeypatch.setattr(import_graph, "PACKAGES", ("probe",))
    assert _imports_of_package_that_are("probe.session_store", SEAM_FORBIDDEN, tmp_path) == {
        "probe.session_store.x": ["probe.engine", "torch"]}
