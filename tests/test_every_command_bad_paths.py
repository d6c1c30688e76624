"""Every `envgen` subcommand given a bad path: a missing one, a file where a directory is
wanted, a directory where a file is wanted, malformed JSON or YAML. Each ends non-zero
naming the path, never in a traceback.

`test_the_walk_covers_every_subcommand` reads the real parser, so a new subcommand fails
here until its paths are walked (`CASES`) or it is listed in `NO_PATH_CASES` with why.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from envgen import cli
from tests.envgen_cli import REPO, envgen_subprocess

CONFIG = str(REPO / "tests/data/guard/envgen_random_authors.yaml")
TABLE = "replication/table1.yaml"

# {missing}: no such path; {file}: a text file; {dir}: an empty folder; {json}: "{not
# json"; {yaml}: malformed YAML; {out}: a fresh path for outputs. The path the command
# must name is the first placeholder of the argv that is not {out}.
CASES: dict[str, list[list[str]]] = {
    "envs preview": [
        ["{missing}", "-o", "{out}"],
        ["{dir}", "-o", "{out}"],
        ["{json}", "-o", "{out}"],
    ],
    "bench rank": [["--work-dir", "{file}", "--budgets", "1024"]],
    "train": [["--steps", "1", "--seed", "0", "--out", "{file}"]],
    "llm record": [["--cache-dir", "{file}"]],
    "llm show": [["--cache-dir", "{file}"], ["--cache-dir", "{missing}"]],
    "llm slots": [["--runs-root", "{file}"], ["--runs-root", "{missing}"]],
    "llm verify": [["--cache-dir", "{file}"]],
    "run": [
        ["{missing}", "--seed", "0", "--runs-root", "{out}"],
        ["{dir}", "--seed", "0", "--runs-root", "{out}"],
        ["{yaml}", "--seed", "0", "--runs-root", "{out}"],
        [CONFIG, "--seed", "0", "--runs-root", "{file}"],
        [CONFIG, "--seed", "0", "--runs-root", "{out}", "--cache-dir", "{file}"],
        [CONFIG, "--seed", "0", "--runs-root", "{out}", "--profile", "smoke", "--params", "{yaml}"],
    ],
    "campaign status": [["cpu", "--params", "{yaml}"], ["cpu", "--runs-root", "{file}"]],
    "campaign handoff": [["cpu", "--params", "{yaml}"]],
    "campaign collect": [
        ["cpu", "--runs-root", "{missing}", "--out", "{out}"],
        ["cpu", "--params", "{yaml}", "--out", "{out}"],
    ],
    "rerun": [["{missing}"], ["{file}"], ["{dir}"]],
    "gpu probe rate": [["{json}", "--out", "{out}"], ["{dir}", "--out", "{out}"]],
    "gpu probe params": [["{json}", "--out", "{out}"], ["{missing}", "--out", "{out}"]],
    "gpu run": [["smoke", TABLE, "--store", "{file}", "--out", "{out}"]],
    "gpu import": [["{missing}"], ["{json}"], ["{dir}"]],
}

NO_PATH_CASES = {
    "bench env": "no path argument",
    "bench heist": "no path argument",
    "bench numerics": "no path argument",
    "bench train": "no path argument",
    "bench precision": "its one path is --out, written after minutes of benching",
    "llm serve": "no path argument (--model is a model's alias)",
    "verify": "no path argument",
    "gpu dry-run": "no path argument",
    "gpu check": "its one path is --out, after the device check (no GPU here)",
    "gpu bench": "its one path is --out, after the device bench (no GPU here)",
    "gpu probe kernels": "its one path is --out, after the device probe (no GPU here)",
    "campaign stop": "signals the campaign's process through its pid file; reads no file",
    "campaign start": "launches a campaign process; its inputs are read as status reads them",
    "campaign run": "trains a campaign in the foreground; its inputs are read as status's",
}


def _leaves(parser: argparse.ArgumentParser, path: list[str]):
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        yield " ".join(path)
    for action in subs:
        for name, child in action.choices.items():
            yield from _leaves(child, [*path, name])


def test_the_walk_covers_every_subcommand():
    commands = set()
    for name in cli.SUBCOMMANDS:
        top = cli.build_parser([name])
        (sub,) = [a for a in top._actions if isinstance(a, argparse._SubParsersAction)]
        commands |= set(_leaves(sub.choices[name], [name]))
    assert not set(CASES) & set(NO_PATH_CASES)
    assert commands == set(CASES) | set(NO_PATH_CASES)


def _paths(tmp_path: Path) -> dict[str, Path]:
    paths = {
        "missing": tmp_path / "no-such-path",
        "file": tmp_path / "a-file.txt",
        "dir": tmp_path / "a-folder",
        "json": tmp_path / "bad.json",
        "yaml": tmp_path / "bad.yaml",
        "out": tmp_path / "out",
    }
    paths["file"].write_text("not a folder\n")
    paths["dir"].mkdir()
    paths["json"].write_text("{not json")
    paths["yaml"].write_text("a: [b\n  - : :\n")
    return paths


@pytest.mark.slow
@pytest.mark.parametrize(
    "command, argv",
    [(c, a) for c, cases in CASES.items() for a in cases],
    ids=lambda x: x if isinstance(x, str) else "-".join(x).replace("{", "").replace("}", ""),
)
def test_a_bad_path_is_one_named_refusal(tmp_path, command, argv):
    paths = _paths(tmp_path)
    filled = [a.format(**{k: str(v) for k, v in paths.items()}) for a in argv]
    named = next(paths[a[1:-1]] for a in argv if a.startswith("{") and a[1:-1] != "out")
    result = envgen_subprocess(*command.split(), *filled, cwd=REPO, timeout=120)
    text = result.stdout + result.stderr
    assert result.returncode != 0, text
    assert "Traceback" not in text, text
    assert str(named) in text, text
    assert paths["file"].read_text() == "not a folder\n"  # nothing written into it
