"""dvc.yaml: every stage depends on all the envgen code its command runs.

DVC re-runs a stage only when one of its `deps` changed, so a module the command imports
but the stage does not list is code whose edit leaves a stale table behind `dvc repro`.
The import closure of each stage's `python -m MODULE` is read from a fresh interpreter,
and widened by every envgen import written anywhere in those files, inside functions
too (a lazy import runs only when its function does, and then its module decides the
output as much as any other); every envgen file in it must lie under one of the stage's
deps. Exempt: stages that
are `always_changed` (they run on every `dvc repro`), package `__init__.py` files with no
statement but a docstring, and the modules that cannot change an output: the two every
process imports (`envgen/__init__.py`: the version and a quiet gym import) and
`lifetime.py` (workers end with their parent).
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from functools import cache
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
STAGES = yaml.safe_load((REPO / "dvc.yaml").read_text())["stages"]
NO_OUTPUT_EFFECT = {"envgen/__init__.py", "envgen/lifetime.py"}
CLOSURE = (
    "import importlib, json, sys; importlib.import_module(sys.argv[1]); "
    "print(json.dumps(sorted(m.__file__ for n, m in list(sys.modules.items()) "
    "if n.split('.')[0] == 'envgen' and getattr(m, '__file__', None))))"
)


def _module(stage: dict) -> str:
    """The MODULE of the stage's `python -m MODULE ...` command."""
    return stage["cmd"].split("python -m ", 1)[1].split()[0]


@cache
def imported_files(module: str) -> tuple[str, ...]:
    """Every envgen source file importing `module` loads, relative to the repository."""
    out = subprocess.run(
        [sys.executable, "-c", CLOSURE, module],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return tuple(Path(f).resolve().relative_to(REPO).as_posix() for f in json.loads(out))


def _source(name: str) -> str | None:
    """The file of envgen module `name`, relative to the repository, if there is one."""
    base = REPO.joinpath(*name.split("."))
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return path.relative_to(REPO).as_posix()
    return None


def written_imports(path: str) -> set[str]:
    """The envgen files the import statements of `path` name, wherever they stand."""
    module = path.removesuffix(".py").removesuffix("/__init__").replace("/", ".")
    package = module if path.endswith("/__init__.py") else module.rpartition(".")[0]
    names: set[str] = set()
    for node in ast.walk(ast.parse((REPO / path).read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parts, *([node.module] if node.module else [])])
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names)
    files = set()
    for name in names:
        parts = name.split(".")
        if parts[0] != "envgen":
            continue
        files.update(f for i in range(1, len(parts) + 1) if (f := _source(".".join(parts[:i]))))
    return files


@cache
def closure(module: str) -> tuple[str, ...]:
    """`imported_files(module)` and, transitively, every envgen file their import
    statements name."""
    seen: set[str] = set()
    todo = list(imported_files(module))
    while todo:
        path = todo.pop()
        if path not in seen:
            seen.add(path)
            todo += written_imports(path) - seen
    return tuple(sorted(seen))


def _exempt(path: str) -> bool:
    if path in NO_OUTPUT_EFFECT:
        return True
    if not path.endswith("/__init__.py"):
        return False
    body = ast.parse((REPO / path).read_text()).body
    return all(isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant) for n in body)


def undeclared(module: str, deps: list[str]) -> list[str]:
    """Files of `module`'s import closure under none of `deps` (files or directories)."""
    roots = [d.rstrip("/") for d in deps]
    return [
        f
        for f in closure(module)
        if not _exempt(f) and not any(f == r or f.startswith(r + "/") for r in roots)
    ]


CHECKED = {
    name: stage.get("do", stage)
    for name, stage in STAGES.items()
    if not stage.get("do", stage).get("always_changed")
}


@pytest.mark.parametrize("name", sorted(CHECKED))
def test_a_stage_depends_on_every_envgen_module_its_command_imports(name):
    stage = CHECKED[name]
    assert undeclared(_module(stage), stage["deps"]) == [], f"add these to {name}'s deps"


def test_the_check_sees_a_missing_dep_and_a_lazily_imported_one():
    """The check itself: the tables stage without envgen/scoring.py is caught."""
    deps = [d for d in CHECKED["tables"]["deps"] if d != "envgen/scoring.py"]
    assert undeclared(_module(CHECKED["tables"]), deps) == ["envgen/scoring.py"]
    # envgen.report.campaign_section imports design_quality inside a function only.
    assert (
        "envgen.report.design_quality"
        not in subprocess.run(
            [sys.executable, "-c", "import sys, envgen.report.tables; print(sorted(sys.modules))"],
            cwd=REPO,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    )
    report = sorted(
        p.relative_to(REPO).as_posix() for p in (REPO / "envgen" / "report").glob("*.py")
    )
    deps = [d for d in CHECKED["tables"]["deps"] if d != "envgen/report"]
    deps += [p for p in report if p != "envgen/report/design_quality.py"]
    assert undeclared(_module(CHECKED["tables"]), deps) == ["envgen/report/design_quality.py"]


def test_every_dep_exists():
    """A dep that names a moved or deleted file stops `dvc repro` at that stage ("No such
    file or directory"), after the stages before it have run."""
    missing = [
        f"{name}: {dep}"
        for name, stage in STAGES.items()
        for dep in stage.get("deps", [])
        if isinstance(dep, str) and "${" not in dep and not (REPO / dep).exists()
    ]
    assert not missing, missing
