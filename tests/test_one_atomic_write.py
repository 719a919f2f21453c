"""One atomic write: every file infertop writes whole goes through probe/common/atomic.py
(`replace_atomically` and the helpers on it), so a failure never leaves a partial file and one
fix reaches every writer. A rename into place anywhere else is a second implementation."""

from __future__ import annotations

import ast

from import_graph import module_files

ATOMIC = "probe.common.atomic"
RENAMES = {"replace", "rename"}     # os.replace, os.rename, Path.replace, Path.rename


def renames(tree: ast.AST) -> list[ast.Call]:
    """os.replace(a, b), os.rename(a, b), and path.replace(target) / path.rename(target) (one
    argument: str.replace takes two, dataclasses.replace keywords)."""
    found = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr in RENAMES):
            continue
        owner = ast.unparse(node.func.value)
        if owner == "os" and len(node.args) == 2:
            found.append(node)
        elif owner not in ("os", "dataclasses") and len(node.args) == 1 and not node.keywords \
                and not isinstance(node.func.value, ast.Constant):
            found.append(node)
    return found


def renames_outside_the_atomic_module() -> list[str]:
    return [f"{module}:{node.lineno}: {ast.unparse(node)}"
            for module, path in module_files().items() if module != ATOMIC
            for node in renames(ast.parse(path.read_text(encoding="utf-8")))]


def test_a_rename_into_place_is_found_and_text_replace_is_not() -> None:
    source = ("os.replace(tmp, path)\nPath(tmp).rename(path)\nname.replace('a', 'b')\n"
              "dataclasses.replace(view, t_s=1)\nreplace(view, t_s=1)\n")
    assert [ast.unparse(c) for c in renames(ast.parse(source))] == [
        "os.replace(tmp, path)", "Path(tmp).rename(path)"]


def test_no_writer_renames_a_file_into_place_but_the_atomic_module() -> None:
    found = renames_outside_the_atomic_module()
    assert not found, "\n".join(found)


def test_the_atomic_module_is_what_the_writers_use() -> None:
    users = {module for module, path in module_files().items()
             if ATOMIC in path.read_text(encoding="utf-8")}
    for writer in ("probe.session_store.journal_reader", "probe.engine.compile_cache",
                   "tui.app", "infertop.commands.trace"):
        assert writer in users, writer
