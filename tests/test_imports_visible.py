"""Imports a reader can see: few inside functions, and each of those says why.

An import inside a function is a dependency neither a reader of the module's head nor a
tool that reads it sees. It stays inside only for a reason written beside it, on its line
or the line above, as `# lazy: <reason>`: an optional dependency that a path must not load
(tests/test_lazy_imports.py), an import circle or upward import that moving it would make
(tests/test_import_layers.py), or a command's start-up time, measured. The reason stands
on the import's line or in the comment lines right above it. And there are at
most `MAX_FUNCTION_IMPORTS` of them in envgen/ (issue 56, "Imports you can see").

`PENDING`: files exempt from both rules while other work moves or rewrites them
(empty now: every file of envgen/ is checked and counted).
"""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
MAX_FUNCTION_IMPORTS = 60
PENDING: set[str] = set()
MARK = "# lazy:"


def _pending(path: str) -> bool:
    return any(path == p or (p.endswith("/") and path.startswith(p)) for p in PENDING)


def function_imports(source: str) -> list[ast.Import | ast.ImportFrom]:
    """Every import statement inside a function (or a class or block within one)."""
    found: list[ast.Import | ast.ImportFrom] = []

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if in_function and isinstance(child, (ast.Import, ast.ImportFrom)):
                found.append(child)
            visit(child, in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)))

    visit(ast.parse(source), False)
    return found


def _explained(lines: list[str], node: ast.Import | ast.ImportFrom) -> bool:
    """Whether `# lazy:` stands on the import's own lines or in the comment lines right
    above it."""
    own = lines[node.lineno - 1 : node.end_lineno]
    above = []
    for line in reversed(lines[: node.lineno - 1]):
        if not line.strip().startswith("#"):
            break
        above.append(line)
    return any(MARK in line for line in own + above)


def unexplained(source: str) -> list[int]:
    """Line numbers of the function-level imports without a `# lazy:` reason."""
    lines = source.splitlines()
    return [node.lineno for node in function_imports(source) if not _explained(lines, node)]


def _checked() -> dict[str, str]:
    """{path relative to the repository: source} of every envgen file not PENDING."""
    files = {p.relative_to(REPO).as_posix(): p for p in sorted((REPO / "envgen").rglob("*.py"))}
    return {rel: p.read_text(encoding="utf-8") for rel, p in files.items() if not _pending(rel)}


def test_every_function_level_import_says_why():
    missing = [f"{path}:{line}" for path, src in _checked().items() for line in unexplained(src)]
    assert missing == [], f"add `{MARK} <reason>` on the line or above, or move it to the top"


def test_few_imports_stand_inside_functions():
    count = sum(len(function_imports(src)) for src in _checked().values())
    assert count <= MAX_FUNCTION_IMPORTS


def test_the_checks_see_an_unexplained_and_an_explained_import():
    source = (
        "import os\n"
        "def f():\n"
        "    import json\n"
        "    class A:\n"
        "        def g(self):\n"
        f"            {MARK} optional dependency (ray),\n"
        "            # needed on a cluster only\n"
        "            import ray\n"
        f"    {MARK} the reason of another import\n"
        "\n"
        "    import sys\n"
        "    from math import (\n"
        "        pi,  " + MARK + " start-up\n"
        "    )\n"
    )
    assert len(function_imports(source)) == 4
    assert unexplained(source) == [3, 11]
