"""The packages are layers, and every import runs down them: a module imports only from its
own layer or those below it, function-local imports counted (a dependency hidden in a function
is still a dependency). docs/architecture.md draws the same picture; this is its check.

Also: no product module imports `tests/`; the contract holds only the seam; a function-local
import of the project's own modules is there only to keep a heavy library off a path that does
not need it, and the failure names the chain that makes it heavy."""

from __future__ import annotations

import ast
from pathlib import Path

import import_graph
from import_graph import import_graph as graph_of
from import_graph import module_files

# Top to bottom; the packages on one line are one layer (they import none of each other).
# A module belongs to the longest package prefix that names it: `probe.engine.decode.paged`
# is in `probe.engine.decode`, `probe.engine.engine` in `probe.engine`.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("infertop",),                                      # the command line
    ("tui",),                                           # the dashboard
    ("probe.bench", "probe.tune"),                      # the studies
    ("probe.report_charts",),                           # their charts and reports
    ("probe.runs",),                                    # runs that bench and tune share
    ("probe.server",),                                  # `infertop serve`: the HTTP API
    ("probe.engine.process",),                          # the engine's processes
    ("probe.monitoring",),                              # the Prometheus exporter they start
    ("probe.engine",),                                  # the engine that chooses a decode path
    ("probe.engine.decode",),                           # the decode paths
    ("probe.engine.measure", "probe.engine.observe"),   # measuring and observing
    ("probe.engine.model",),                            # the model and a request
    ("probe.session_store",),                           # sessions on disk
    ("probe.checks",),                                  # pre-checks and signals
    ("probe.analysis",),                                # the figures and the doctor
    ("probe.contract",),                                # the seam: values that cross
    ("workloads",),                                     # traces and the replayer
    ("probe.common",),                                  # shared utilities
    ("probe",),                                         # the package's logging setup
)
# What makes a function-local import worth it: importing one of these costs seconds or
# hundreds of megabytes (torch, transformers) or starts machinery (ray, textual).
HEAVY = ("torch", "transformers", "torchao", "triton", "textual", "textual_plotext", "plotext",
         "ray", "matplotlib", "ctranslate2", "pynvml", "prometheus_client", "safetensors",
         "pyarrow", "pandas", "scipy", "optuna", "zeus", "uvicorn", "starlette")
PROJECT = ("infertop", "probe", "workloads", "tui")
SEAM = {"probe.contract", "probe.contract.device_sample", "probe.contract.engine_link",
        "probe.contract.figures",
        "probe.contract.live", "probe.contract.objective", "probe.contract.options",
        "probe.contract.prepared_workload", "probe.contract.protocol", "probe.contract.records",
        "probe.contract.session", "probe.contract.settings"}


def layer_of(module: str) -> tuple[int, str] | None:
    best: tuple[int, str] | None = None
    for index, packages in enumerate(LAYERS):
        for package in packages:
            if (module == package or module.startswith(package + ".")) and (
                    best is None or len(package) > len(best[1])):
                best = (index, package)
    return best


def arrows_up(graph: dict[str, set[str]]) -> list[str]:
    found = []
    for module, targets in sorted(graph.items()):
        here = layer_of(module)
        for target in sorted(targets):
            there = layer_of(target)
            if here and there and there[0] < here[0]:
                found.append(f"{module} ({here[1]}) imports {target} ({there[1]}), a layer above")
            elif here and there and there[0] == here[0] and there[1] != here[1]:
                found.append(f"{module} ({here[1]}) imports {target} ({there[1]}), its own layer")
    return found


def test_every_module_is_in_a_layer() -> None:
    assert [m for m in module_files() if layer_of(m) is None] == []


def test_imports_run_down_the_layers_function_local_ones_included() -> None:
    found = arrows_up(graph_of())
    assert not found, "\n".join(found)


def test_an_arrow_up_inside_a_function_is_found(tmp_path: Path, monkeypatch) -> None:
    for folder in ("probe", "probe/contract", "probe/analysis"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "__init__.py").write_text("")
    (tmp_path / "probe/analysis/stats.py").write_text("from probe.contract import records\n")
    (tmp_path / "probe/contract/records.py").write_text(
        "def f():\n    from probe.analysis.stats import x\n")
    monkeypatch.setattr(import_graph, "PACKAGES", ("probe",))
    assert arrows_up(graph_of(tmp_path)) == [
        "probe.contract.records (probe.contract) imports probe.analysis.stats "
        "(probe.analysis), a layer above"]


def _imports(path: Path) -> list[tuple[str, bool]]:
    """(the module each import names, whether it sits inside a function), TYPE_CHECKING left out."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    local = {id(node) for function in ast.walk(tree)
             if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef))
             for node in ast.walk(function)}
    found = []
    for node in import_graph._runtime_nodes(tree):
        # `from a.b import c` names a.b.c where c is a module (import_graph._resolve falls back)
        names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                 [f"{node.module}.{a.name}" for a in node.names]
                 if isinstance(node, ast.ImportFrom) and node.module and not node.level else [])
        found += [(name, id(node) in local) for name in names]
    return found


def test_no_product_module_imports_the_tests_or_the_tools() -> None:
    """tests/, tools/ (scripts around the product) and benchmarks/ sit outside it."""
    wrong = {module: name for module, path in module_files().items()
             for name, _ in _imports(path)
             if name.split(".")[0] in ("tests", "tools", "benchmarks")}
    assert not wrong, wrong


def test_the_contract_holds_only_the_seam() -> None:
    assert {m for m in module_files() if layer_of(m) == (LAYERS.index(("probe.contract",)),
                                                         "probe.contract")} == SEAM


def heavy_chain(module: str, modules: dict[str, Path], known: dict[str, str | None],
                opened: frozenset[str] = frozenset()) -> str | None:
    """Why importing `module` is heavy: the chain of top-level imports (its packages' first)
    down to a HEAVY library; None when it is light. `known`: the answers so far."""
    if module in known:
        return known[module]
    parents = [".".join(module.split(".")[:i]) for i in range(1, module.count(".") + 1)]
    tops = [name for name, local in _imports(modules[module]) if not local]
    partial = False             # an answer that met a module still being read is not kept
    for name in [p for p in parents if p in modules] + tops:
        if name.split(".")[0] in HEAVY:
            known[module] = f"{module} > {name.split('.')[0]}"
            return known[module]
        target = import_graph._resolve(name, modules)
        if not target or target == module:
            continue
        if target in opened:
            partial = True
            continue
        below = heavy_chain(target, modules, known, opened | {module})
        if below:
            known[module] = f"{module} > {below}"
            return known[module]
    if not partial:
        known[module] = None
    return None


def test_a_function_local_import_of_the_project_keeps_a_heavy_library_off_the_path() -> None:
    modules = module_files()
    known: dict[str, str | None] = {}
    light = sorted({f"{module} imports {name} inside a function; it is light: import it at "
                    "the top" for module, path in modules.items()
                    for name, local in _imports(path)
                    if local and name.split(".")[0] in PROJECT
                    and (target := import_graph._resolve(name, modules))
                    and heavy_chain(target, modules, known) is None})
    assert not light, "\n".join(light)


def test_the_heavy_chain_names_the_library(tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "probe").mkdir()
    (tmp_path / "probe/__init__.py").write_text("")
    (tmp_path / "probe/a.py").write_text("import probe.b\n")
    (tmp_path / "probe/b.py").write_text("def f():\n    import ray\nimport torch\n")
    (tmp_path / "probe/c.py").write_text("def f():\n    import torch\n")
    monkeypatch.setattr(import_graph, "PACKAGES", ("probe",))
    modules = module_files(tmp_path)
    assert heavy_chain("probe.a", modules, {}) == "probe.a > probe.b > torch"
    assert heavy_chain("probe.c", modules, {}) is None
