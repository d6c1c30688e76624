"""Names that become paths (a table id): letters, digits, - and _ only, so every output
stays under its directory. `table: ../../x` ends in one line and writes nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from envgen.errors import ConfigError
from envgen.input_checks import safe_name

REPO = Path(__file__).resolve().parents[1]
BAD = ["../../x", "a/b", "", "x y", ".hidden", "t" * 65, "tab\nle"]


@pytest.mark.parametrize("name", BAD)
def test_safe_name_refuses(name):
    with pytest.raises(ConfigError, match="not a name"):
        safe_name(name, "table")


def test_safe_name_accepts_the_committed_tables():
    for path in (REPO / "replication").glob("*.yaml"):
        assert safe_name(path.stem, "table") == path.stem


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        timeout=300,
    )


def _tree(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


def test_replication_file_table_outside_out_is_one_line(tmp_path):
    work = tmp_path / "a" / "b"
    work.mkdir(parents=True)
    text = (REPO / "replication" / "table1.yaml").read_text()
    (work / "t.yaml").write_text(text.replace("table: table1", "table: ../../x"))
    before = _tree(tmp_path)
    args = ["envgen.pipeline.train", "t.yaml", "--params", str(REPO / "params.yaml")]
    result = _run([*args, "--runs-root", "runs", "--out", "o/runs.json", "--plan"], work)
    text = result.stdout + result.stderr
    assert result.returncode != 0 and "Traceback" not in text, text
    assert len(text.strip().splitlines()) == 1 and "t.yaml: table: '../../x' is not a name" in text
    assert _tree(tmp_path) == before


@pytest.mark.parametrize("module", ["envgen.report.tables", "envgen.report.figures"])
def test_runs_json_table_outside_out_is_one_line(tmp_path, module):
    work = tmp_path / "a" / "b"
    work.mkdir(parents=True)
    runs = json.loads((REPO / "results" / "table1" / "runs.json").read_text())
    runs["table"] = "../../x"
    (work / "runs.json").write_text(json.dumps(runs))
    before = _tree(tmp_path)
    extra = ["--metrics", "m.json"] if module.endswith("tables") else ["--plots", "plots"]
    result = _run([module, "runs.json", "--out", "out", *extra], work)
    text = result.stdout + result.stderr
    assert result.returncode != 0 and "Traceback" not in text, text
    assert len(text.strip().splitlines()) == 1 and "'../../x' is not a name" in text, text
    assert _tree(tmp_path) == before
