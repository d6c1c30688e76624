"""A file where a directory is wanted, or a file that is not JSON or YAML, given on the
command line: one line naming the path and a non-zero exit, never a traceback, and
nothing written.

Checked through the real CLI (`envgen run --runs-root FILE` and `--cache-dir FILE`,
`envgen rerun --cache-dir FILE`, `envgen llm slots --runs-root FILE`, `envgen gpu probe rate`
with malformed or foreign JSON, a directory or a missing file, `envgen gpu probe params`
with malformed JSON, `envgen campaign status --params` with malformed YAML)."""

from __future__ import annotations

from pathlib import Path

import pytest

from envgen.errors import ConfigError
from envgen.gpu import rate
from envgen.input_checks import writable_dir
from tests.envgen_cli import envgen_subprocess

REPO = Path(__file__).resolve().parents[1]
CONFIG = REPO / "tests/data/guard/envgen_random_authors.yaml"


def _one_line_naming(result, path: Path) -> None:
    text = result.stdout + result.stderr
    assert result.returncode != 0, text
    assert "Traceback" not in text, text
    lines = text.strip().splitlines()
    assert len(lines) == 1, text
    assert str(path) in lines[0], text


def test_run_with_a_file_as_runs_root_is_one_line(tmp_path):
    runs_root = tmp_path / "runs"
    runs_root.write_text("not a directory\n")
    result = envgen_subprocess(
        "run", str(CONFIG), "--seed", "0", "--runs-root", str(runs_root), "--torch-threads", "1"
    )
    _one_line_naming(result, runs_root)
    assert "is a file" in result.stdout + result.stderr
    assert runs_root.read_text() == "not a directory\n"


@pytest.mark.parametrize("kind", ["file", "missing"])
def test_llm_slots_with_a_file_or_no_folder_as_runs_root_is_one_line(tmp_path, kind):
    """It filed 0 slots and exited 0: a typo'd runs root looked like a store with no LLM
    runs."""
    runs_root = tmp_path / "runs"
    if kind == "file":
        runs_root.write_text("not a directory\n")
    cache = tmp_path / "cache"
    cache.mkdir()
    result = envgen_subprocess(
        "llm", "slots", "--runs-root", str(runs_root), "--cache-dir", str(cache)
    )
    _one_line_naming(result, runs_root)
    assert ("is a file" if kind == "file" else "no such directory") in result.stderr
    assert not list(cache.iterdir())


@pytest.mark.parametrize("command", ["run", "rerun"])
def test_a_file_as_cache_dir_is_one_line(tmp_path, command):
    """`envgen run` read a file as an empty cache (a wrong not_recorded for an LLM row);
    `envgen rerun` reported only that its retraining failed."""
    cache = tmp_path / "cache"
    cache.write_text("not a directory\n")
    if command == "run":
        args = ["run", str(CONFIG), "--seed", "0", "--runs-root", str(tmp_path / "runs")]
    else:
        args = ["rerun", str(REPO / "results/runs/random-8ep/seed-0"), "--updates", "1"]
    result = envgen_subprocess(*args, "--cache-dir", str(cache))
    _one_line_naming(result, cache)
    assert "is a file; give the directory of LLM replies" in result.stdout + result.stderr
    assert not (tmp_path / "runs").exists()


def test_writable_dir_names_the_file_in_the_way(tmp_path):
    (tmp_path / "file").write_text("x")
    assert writable_dir(tmp_path / "new" / "deeper", "runs") == tmp_path / "new" / "deeper"
    with pytest.raises(ConfigError, match=f"{tmp_path / 'file'} is a file; give a directory"):
        writable_dir(tmp_path / "file" / "a" / "b", "runs")
    with pytest.raises(ConfigError, match="file: is a file; give a directory"):
        writable_dir(tmp_path / "file", "runs")


@pytest.mark.parametrize(
    ("name", "text", "words"),
    [
        ("bench.log", "timing...\n{bad json\n", "not JSON"),
        ("foreign.log", '{"a": 1}\n', "not bench train's"),
        (
            "fields.log",
            '{"device": "d", "model": "m", "mode": "x", "cohorts": [{"groups": 1}]}',
            "field .cohort_sps. missing",
        ),
        ("missing.log", None, "no such file"),
        ("folder", "", "is a directory"),
    ],
)
def test_probe_rate_refuses_what_is_not_a_bench_line_in_one_line(tmp_path, name, text, words):
    bench = tmp_path / name
    if text is not None and name == "folder":
        bench.mkdir()
    elif text is not None:
        bench.write_text(text)
    out = tmp_path / "out" / "rate.json"
    if name in ("bench.log", "missing.log"):  # through the CLI: exit code, one line
        result = envgen_subprocess("gpu", "probe", "rate", str(bench), "--out", str(out))
        _one_line_naming(result, bench)
        assert words in result.stderr
    else:
        with pytest.raises(ConfigError, match=words):
            rate.pick_rate(rate.read_bench(bench))
    assert not out.parent.exists()


def test_probe_params_and_campaign_params_refuse_malformed_files(tmp_path):
    bad_json = tmp_path / "rate.json"
    bad_json.write_text("{bad")
    result = envgen_subprocess(
        "gpu", "probe", "params", str(bad_json), "--out", str(tmp_path / "p.yaml")
    )
    _one_line_naming(result, bad_json)
    bad_yaml = tmp_path / "params.yaml"
    bad_yaml.write_text("profiles: [\n")
    result = envgen_subprocess("campaign", "status", "cpu", "--params", str(bad_yaml), cwd=REPO)
    _one_line_naming(result, bad_yaml)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["params.yaml", "rate.json"]
