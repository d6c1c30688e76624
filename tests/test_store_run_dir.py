"""The run directory has one owner (`envgen.store.run_dir`): it builds the layout, parses
it back, and is the only code that spells a run file's name."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pytest

from envgen.errors import EnvGenError
from envgen.store.run_dir import CycleDir, RunDir, random_folder

REPO = Path(__file__).resolve().parents[1]
OWNER = REPO / "envgen" / "store"


def _names() -> set[str]:
    """Every file and folder name the owner gives a run, read from the owner itself."""
    run, cycle = RunDir(Path("r")), CycleDir(Path("cycle-01"))
    names = {
        getattr(run, name).name
        for name, value in vars(RunDir).items()
        if isinstance(value, property) and isinstance(getattr(run, name), Path)
    }
    names |= {
        getattr(cycle, name).name
        for name, value in vars(CycleDir).items()
        if isinstance(value, property) and isinstance(getattr(cycle, name), Path)
    }
    names |= {cycle.rollouts(kind).name for kind in ("sfl", "plr")}
    return names - {"r", "cycle-01", "cycles", "checkpoints", "validation"}  # common words


def _spelled(path: Path, names: set[str]) -> list[str]:
    """The string literals of `path` (docstrings aside) that are a run file's name or a
    path or glob ending in one."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Constant) or not isinstance(node.value, str):
            continue
        text = node.value.strip()
        if id(node) in docstrings or " " in text:
            continue
        tail = text.rsplit("/", 1)[-1]
        if tail in names or tail.endswith("_rollouts.json"):
            found.append(f"{path.relative_to(REPO)}:{node.lineno}: {text!r}")
    return found


def test_the_layout_is_built_and_parsed_back_by_the_owner(tmp_path: Path):
    run = RunDir.of(tmp_path, "abc123", 7)
    assert run.root == tmp_path / "abc123" / "seed-7"
    assert (run.config_hash, run.seed, run.run_id) == ("abc123", 7, "abc123/seed-7")
    assert run.cycle(3).root == run.root / "cycles" / "cycle-03" and run.cycle(3).index == 3
    assert RunDir(tmp_path / "abc123" / "seed-07").seed is None  # one name per seed
    assert RunDir(tmp_path / "abc123" / "other").seed is None
    random_run = RunDir.of(tmp_path, random_folder(50), 2)
    assert (random_run.random_episodes, run.random_episodes) == (50, None)
    for seed in (2, 0):
        RunDir.of(tmp_path, "abc123", seed).root.mkdir(parents=True)
    (tmp_path / "abc123" / "seed-9").write_text("not a run")  # a file: not a run
    assert [r.seed for r in RunDir.under(tmp_path)] == [0, 2]
    assert RunDir.seeds_of(tmp_path / "abc123") == RunDir.under(tmp_path)


def test_no_run_file_name_is_spelled_outside_the_owner():
    names = _names()
    assert {"run.yaml", "final_metrics.json", "episodes.jsonl", "manifest.json"} <= names
    found = [
        line
        for path in sorted((REPO / "envgen").rglob("*.py"))
        if not path.is_relative_to(OWNER)
        for line in _spelled(path, names)
    ]
    assert found == []


def test_a_folder_keeps_one_run_config_and_reads_it_back(tmp_path: Path):
    @dataclasses.dataclass
    class Config:  # the two methods of RunConfig the store calls
        lr: float

        def config_hash(self) -> str:
            return f"h{self.lr}"

        def to_dict(self) -> dict:
            return {"lr": self.lr}

    run = RunDir.of(tmp_path, "h1", 0)
    for _ in range(2):  # a resumed run writes the same config again
        run.write_config(Config(1), 0)
    assert run.read_config() == {"seed": 0, "config_hash": "h1", "lr": 1}
    with pytest.raises(EnvGenError, match="describes another run"):
        run.write_config(Config(2), 0)
    run.config.write_text("- a list\n")
    with pytest.raises(EnvGenError, match="holds a list, not a run config"):
        run.read_config()
