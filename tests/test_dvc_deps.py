"""dvc.yaml: every stage depends on all the envgen code its command runs.

DVC re-runs a stage only when one of its `deps` changed, so a module the command imports
but the stage does not list is code whose edit leaves a stale table behind `dvc repro`.
The import closure of each stage's `python -m MODULE` is read from a fresh interpreter
and every envgen file in it must lie under one of the stage's deps. Exempt: stages that
are `always_changed` (they run on every `dvc repro`), package `__init__.py` files with no
statement but a docstring, and the modules that cannot change an output: the two every
process imports (`envgen/__init__.py`: the version and a quiet gym import;
`gym_notice.py`) and `lifetime.py` (workers end with their parent).
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
NO_OUTPUT_EFFECT = {"envgen/__init__.py", "envgen/gym_notice.py", "envgen/lifetime.py"}
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
        for f in imported_files(module)
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


def test_the_check_sees_a_missing_dep():
    """The check itself: the tables stage without envgen/scoring.py is caught."""
    deps = [d for d in CHECKED["tables"]["deps"] if d != "envgen/scoring.py"]
    assert undeclared(_module(CHECKED["tables"]), deps) == ["envgen/scoring.py"]
