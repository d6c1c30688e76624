"""YAML someone else wrote is read bounded, in one line naming the file.

`yaml.safe_load` of a 100,000-deep `x: [[[...]]]` raised RecursionError in verify, in
`gpu import` (which then imported none of the archive's other runs) and in the params
stage; a run.yaml of `- a` gave verify an AttributeError and `a: [` a
ParserError, before its identity and manifest checks. `envgen.yaml_input` refuses a
file too large or nested too deep before building its value, and a top-level value
that is not a mapping, each in one line.
"""

from __future__ import annotations

import shutil
import tarfile
from pathlib import Path

import pytest

from envgen import yaml_input
from envgen.errors import ConfigError, EnvGenError

REPO = Path(__file__).resolve().parents[1]
HEIST_RUN = "0811a37889ce/seed-0"  # a committed Heist run of 32 KB, with its run.yaml
DEEP = "x: " + "[" * 100_000 + "]" * 100_000 + "\n"
DEEP_BLOCK = "".join(" " * i + "a:\n" for i in range(1_000)) + " " * 1_000 + "b: 1\n"


def _one_line(message: str, start: str, *words: str) -> None:
    assert "\n" not in message and message.startswith(start), message
    for word in words:
        assert word in message, message


@pytest.mark.parametrize(
    ("text", "words"),
    [
        (DEEP, "nest deeper than 32"),
        (DEEP_BLOCK, "nest 33 deep or more, more than 32"),
        ("- a\n", "holds a list, not `field: value` lines"),
        ("a: [\n", "YAML syntax error at line 2"),
        ("", "is empty"),
        (b"\xff\xfe\x00a", "not UTF-8 text"),
        # 40 anchors, each a list of the one before: an alias counts as deep as its node
        ("\n".join(["a0: &a0 [1]"] + [f"a{i}: &a{i} [*a{i - 1}]" for i in range(1, 40)]), "nest"),
    ],
)
def test_a_bad_yaml_file_is_one_line_naming_it(text, words):
    with pytest.raises(yaml_input.YAMLInputError) as err:
        yaml_input.loads_mapping(text, "run.yaml", "a run config")
    _one_line(str(err.value), "run.yaml: ", words)


def test_the_depth_counts_sequences_mappings_and_aliases():
    assert yaml_input.nesting_depth("a: 1") == 1
    assert yaml_input.nesting_depth("a: {b: [[1]]}") == 4
    assert yaml_input.nesting_depth("a: &x [[1]]\nb: [*x]") == 4
    assert yaml_input.loads_mapping("a: [1, {b: 2}]", "f", "x") == {"a": [1, {"b": 2}]}


def test_a_file_over_the_size_cap_is_refused_before_it_is_read(tmp_path):
    path = tmp_path / "run.yaml"
    path.write_text("a: " + "1" * 100 + "\n")
    with pytest.raises(yaml_input.YAMLInputError) as err:
        yaml_input.read(path, max_bytes=64)
    _one_line(str(err.value), f"{path}: ", "more than the 64")
    assert yaml_input.read(path) == {"a": int("1" * 100)}


def test_a_deep_params_yaml_is_one_line(tmp_path, capsys):
    from envgen.pipeline.params_stage import main, read_params

    path = tmp_path / "params.yaml"
    path.write_text(DEEP)
    with pytest.raises(ConfigError) as err:
        read_params(path)
    _one_line(str(err.value), f"{path}: ", "nest")
    assert main([str(path)]) == 1
    out, err_text = capsys.readouterr()
    assert out == "" and len(err_text.strip().splitlines()) == 1 and str(path) in err_text


def _resealed(root: Path, run_yaml: str) -> Path:
    """The committed Heist run under `root`, its run.yaml replaced and the run resealed
    (the manifest vouches for bytes only)."""
    from envgen.store import seal_run

    run = root / HEIST_RUN
    shutil.copytree(REPO / "results" / "runs" / HEIST_RUN, run)
    (run / "run.yaml").write_text(run_yaml)
    (run / "manifest.json").unlink()
    seal_run(run)
    return run


@pytest.mark.parametrize(("run_yaml", "words"), [("- a\n", "holds a list"), ("a: [\n", "syntax")])
def test_verify_names_a_run_yaml_that_is_no_mapping(tmp_path, run_yaml, words):
    """Both gave verify a traceback (AttributeError, ParserError) in its results-version
    step, which reads run.yaml before the identity and manifest checks."""
    from envgen.evidence.checks import check_run_store

    run = _resealed(tmp_path / "runs", run_yaml)
    check = check_run_store(tmp_path / "runs", listed=[run])
    assert not check.ok
    _one_line(check.detail, f"{run}/run.yaml: ", words)


def test_verify_names_a_deep_run_yaml(tmp_path):
    from envgen.evidence.checks import check_run_store

    run = _resealed(tmp_path / "runs", DEEP)
    check = check_run_store(tmp_path / "runs", listed=[run])
    assert not check.ok
    _one_line(check.detail, f"{run}/run.yaml: ", "nest")


def test_gpu_import_refuses_a_deep_run_yaml_by_name_and_imports_the_others(tmp_path):
    from envgen.gpu.archive import REFUSED, import_archives

    store = tmp_path / "store"
    _resealed(store, DEEP)
    good = "random-8ep/seed-0"
    shutil.copytree(REPO / "results" / "runs" / good, store / good)
    archive = tmp_path / "runs-00.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(store, arcname="runs")
    lines = import_archives([archive], tmp_path / "runs")
    assert len(lines) == 2
    refused = next(line for line in lines if line.startswith(REFUSED))
    _one_line(refused, f"{REFUSED}{HEIST_RUN} ({archive}): {HEIST_RUN}/run.yaml: ", "nest")
    assert f"{good}: imported" in lines
    assert (tmp_path / "runs" / good).is_dir() and not (tmp_path / "runs" / HEIST_RUN).exists()


def test_identity_names_a_deep_run_yaml(tmp_path):
    from envgen.loop.identity import check_identity

    run = _resealed(tmp_path / "runs", DEEP)
    with pytest.raises(EnvGenError) as err:
        check_identity(run)
    _one_line(str(err.value), f"{run}/run.yaml: ", "nest", "restore it from git")
