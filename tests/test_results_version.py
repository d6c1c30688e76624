"""The results-version guard: behaviour changes only with a version bump.

A finished run stays current while its recorded results version equals the code's
(`envgen/results_version.py`), so an edit that changes what runs produce must bump it.
This test runs a small fixed-seed set (tests/data/guard/*.yaml: PPO and AD updates,
EnvGen cycles with the LLM, heuristic and random designers, Crafter under the stock and
the authors' world rules, Heist) twice through the command line, `envgen run`, in
subprocesses: once with this tree's code and once with the code of the commit that last
changed `envgen/results_version.py` (extracted with `git archive` into a temporary
directory and put first on PYTHONPATH). The outputs must be identical, timing fields
aside, unless the version changed since that commit. Driving both sides through the
command line keeps the guard working when modules move or are renamed.
"""

from __future__ import annotations

import ast
import gzip
import json
import os
import subprocess
import sys
import tarfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from envgen.results_version import RESULTS_VERSION
from envgen.store.run_diff import first_difference

REPO = Path(__file__).resolve().parents[1]
VERSION_FILE = "envgen/results_version.py"
GUARD_CONFIGS = sorted((REPO / "tests" / "data" / "guard").glob("*.yaml"))
LLM_CACHE = REPO / "tests" / "data" / "loop_cache"
FORKED_WORKERS = "envgen_llm"  # training and two evaluations, each a vector env


def _git(*args: str, repo: Path = REPO) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=True
    ).stdout.strip()


def reference_commit(repo: Path = REPO) -> tuple[str | None, str]:
    """(the commit that last changed a version value, "") or (None, why it is unknown).

    The versions are compared as parsed values, not as the file's bytes: a commit that
    touches the file without changing a number (a comment, a reformat) is no reference,
    or a behaviour change committed with such a touch would compare the tree with itself
    and pass. Walking back over the commits that touched the file, the reference is the
    oldest of the newest commits whose versions equal the latest committed ones.

    In a shallow clone the history may end before that commit (`git log` then takes the
    oldest commit it has for one that added every file), so a walk that reaches the cut
    is refused, not guessed.
    """
    try:
        commits = _git("log", "--format=%H", "--", VERSION_FILE, repo=repo).split()
        shallow = _git("rev-parse", "--is-shallow-repository", repo=repo) == "true"
        cut = (
            Path(repo, _git("rev-parse", "--git-path", "shallow", repo=repo)).read_text().split()
            if shallow
            else []
        )
    except (OSError, subprocess.CalledProcessError):
        return None, "no git history"
    if not commits:
        return None, f"no commit in the history changed {VERSION_FILE}"
    latest = versions_at(commits[0], repo)
    reference = commits[0]
    for commit in commits:
        if commit in cut:
            return None, (
                f"shallow clone cut at {commit[:10]}, so the commit that last changed a "
                f"version in {VERSION_FILE} is unknown (git fetch --unshallow)"
            )
        if versions_at(commit, repo) != latest:
            return reference, ""
        reference = commit
    return reference, ""


def versions_at(commit: str, repo: Path = REPO) -> dict[str, int] | None:
    """The RESULTS_VERSION mapping of the version file at `commit`, parsed, not run (None
    where the file holds no such literal mapping)."""
    try:
        tree = ast.parse(_git("show", f"{commit}:{VERSION_FILE}", repo=repo))
    except (SyntaxError, subprocess.CalledProcessError):
        return None
    for node in tree.body:
        target = node.target if isinstance(node, ast.AnnAssign) else None
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
        value = getattr(node, "value", None)
        if isinstance(target, ast.Name) and target.id == "RESULTS_VERSION" and value:
            try:
                parsed = ast.literal_eval(value)
            except ValueError:
                return None
            return parsed if isinstance(parsed, dict) else None
    return None


def extract(commit: str, dest: Path) -> Path:
    """The package `envgen/` of `commit`, unpacked under `dest`."""
    dest.mkdir(parents=True, exist_ok=True)
    archive = dest / "ref.tar"
    with archive.open("wb") as f:
        subprocess.run(
            ["git", "-C", str(REPO), "archive", "--format=tar", commit, "envgen"],
            stdout=f,
            check=True,
        )
    with tarfile.open(archive) as tar:
        tar.extractall(dest, filter="data")
    archive.unlink()
    return dest


def run_side(code_root: Path, out: Path, config: Path, workers: int = 1) -> Path:
    """`envgen run CONFIG --seed 0 --workers N` with the package at `code_root`; returns
    the run dir. One worker steps every env in the run's own process: the faster choice
    beside the other test worker, and the reference code predates ENVGEN_ENV_WORKERS."""
    env = {**os.environ, "PYTHONPATH": str(code_root), "OMP_NUM_THREADS": "1"}
    command = [
        sys.executable,
        "-c",
        "import sys, envgen.cli; sys.exit(envgen.cli.main())",
        "run",
        str(config),
        "--seed",
        "0",
        "--runs-root",
        str(out),
        "--cache-dir",
        str(LLM_CACHE),
        "--torch-threads",
        "1",
        "--workers",
        str(workers),
    ]
    out.parent.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=out.parent)
    assert done.returncode == 0, f"{config.name} with {code_root}: {done.stdout}{done.stderr}"
    (run_dir,) = sorted(out.glob("*/seed-0"))
    return run_dir


def test_first_difference_names_the_file_record_and_field(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    for d in (a, b):
        d.mkdir()
        (d / "final_metrics.json").write_text(json.dumps({"score": 1.0, "wall_s": 3.0}))
    (a / "episodes.jsonl.gz").write_bytes(gzip.compress(b'{"step": 1, "reward": 1.0}\n'))
    (b / "episodes.jsonl").write_text('{"step": 1, "reward": 1.0}\n')
    assert first_difference(a, b) is None  # sealed and unsealed logs compare by content
    (b / "final_metrics.json").write_text(json.dumps({"score": 1.0, "wall_s": 9.0}))
    assert first_difference(a, b) is None  # wall time is not behaviour
    (b / "episodes.jsonl").write_text('{"step": 1, "reward": 2.0}\n')
    assert first_difference(a, b) == "episodes.jsonl record 1: reward differ"
    (b / "final_metrics.json").write_text(json.dumps({"score": 2.0}))
    assert first_difference(a, b) == "episodes.jsonl record 1: reward differ"
    (b / "episodes.jsonl").write_text('{"step": 1, "reward": 1.0}\n')
    assert first_difference(a, b) == "final_metrics.json: score differ"


def test_a_shallow_clone_cut_after_the_version_commit_gives_no_reference(tmp_path):
    origin = tmp_path / "origin"
    (origin / "envgen").mkdir(parents=True)
    version = origin / VERSION_FILE

    def commit(message: str) -> None:
        _git("add", "-A", repo=origin)
        _git(
            *("-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"),
            *("commit", "-qm", message),
            repo=origin,
        )

    _git("init", "-q", repo=origin)
    (origin / "README").write_text("before the results version\n")
    commit("start")
    version.write_text('RESULTS_VERSION = {"crafter": 1}\n')
    commit("version 1")
    first = _git("rev-parse", "HEAD", repo=origin)
    (origin / "envgen" / "config.py").write_text("ENT_COEF = 0.02\n")
    commit("a default changed, no bump")
    assert reference_commit(origin) == (first, "")
    # depth 2 stops at `first` itself: whether it changed the file cannot be told either
    for depth, expected in ((3, first), (2, None), (1, None)):
        clone = tmp_path / f"depth-{depth}"
        subprocess.run(
            ["git", "clone", "-q", f"--depth={depth}", origin.as_uri(), str(clone)], check=True
        )
        found, why = reference_commit(clone)
        assert found == expected
        if expected is None:
            assert why.startswith("shallow clone cut at") and "unshallow" in why


def test_a_touched_but_unchanged_version_file_is_no_reference(tmp_path):
    """`score * 1.5` committed with a comment in the version file: the guard must compare
    with the code of the commit that set the version, where the score was not scaled."""
    repo = tmp_path / "repo"
    (repo / "envgen").mkdir(parents=True)
    version, scoring = repo / VERSION_FILE, repo / "envgen" / "scoring.py"

    def commit(message: str) -> str:
        _git("add", "-A", repo=repo)
        _git(
            *("-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"),
            *("commit", "-qm", message),
            repo=repo,
        )
        return _git("rev-parse", "HEAD", repo=repo)

    _git("init", "-q", repo=repo)
    version.write_text('RESULTS_VERSION: dict[str, int] = {"crafter": 1, "heist": 1}\n')
    scoring.write_text("def score(x):\n    return x\n")
    first = commit("version 1")
    version.write_text(
        '"""Declared here."""\n\nRESULTS_VERSION: dict[str, int] = {"crafter": 1, "heist": 1}\n'
    )
    scoring.write_text("def score(x):\n    return x * 1.5  # touched with the version file\n")
    commit("score * 1.5, and a word in the version file")
    reference, why = reference_commit(repo)
    assert (reference, why) == (first, "")
    assert versions_at(reference, repo) == {"crafter": 1, "heist": 1}  # not bumped: the
    # guard runs the old scoring against the new one and fails on the difference
    assert "1.5" not in _git("show", f"{reference}:envgen/scoring.py", repo=repo)
    version.write_text('RESULTS_VERSION: dict[str, int] = {"crafter": 2, "heist": 1}\n')
    bump = commit("a real bump")
    version.write_text('RESULTS_VERSION: dict[str, int] = {"crafter": 2, "heist": 1}  # ok\n')
    commit("a comment after the bump")
    assert reference_commit(repo) == (bump, "")


@pytest.mark.slow
def test_behaviour_is_unchanged_unless_the_results_version_is_bumped(tmp_path):
    commit, why = reference_commit()
    if commit is None:
        pytest.skip(f"{why}: the guard needs the commit that set the results version")
    old = versions_at(commit) or {}
    bumped = sorted(g for g in RESULTS_VERSION if RESULTS_VERSION[g] != old.get(g))
    reference = extract(commit, tmp_path / "reference")

    def both(config: Path) -> tuple[Path, Path]:
        # One config runs our side's envs in a worker process too (forked from the
        # preloaded forkserver, envgen/envs/worker_preload.py) against the reference's
        # single process: the worker count must change no number either.
        workers = 2 if config.stem == FORKED_WORKERS else 1
        ours = run_side(REPO, tmp_path / "ours" / config.stem, config, workers)
        theirs = run_side(reference, tmp_path / "theirs" / config.stem, config)
        return ours, theirs

    # The extracted tree's numba cache (Crafter's compiled world generation) starts cold:
    # one run compiles it alone, where two at once each compiled it (100 s apiece on a
    # busy 2-core machine). `envgen run` keeps that finished run when `both` asks again.
    warm = next(c for c in GUARD_CONFIGS if c.stem == "envgen_random_authors")
    run_side(reference, tmp_path / "theirs" / warm.stem, warm)
    with ThreadPoolExecutor(max_workers=2) as pool:
        pairs = list(pool.map(both, GUARD_CONFIGS))
    problems = []
    for config, (ours, theirs) in zip(GUARD_CONFIGS, pairs, strict=True):
        game = "heist" if config.stem.startswith("heist") else "crafter"
        difference = first_difference(ours, theirs)
        if difference and game not in bumped:
            problems.append(
                f"{config.name}: {difference}: behaviour changed since {commit[:10]} without "
                f"a version bump; raise RESULTS_VERSION[{game!r}] in {VERSION_FILE} (then "
                "retrain or keep the committed runs as another version's)"
            )
    assert not problems, "\n".join(problems)
