"""The results-version guard: behaviour changes only with a version bump.

A finished run stays current while its recorded results version equals the code's
(`envgen/results_version.py`, one version per results key), so an edit that changes what
runs produce must bump its key. This test runs a small fixed-seed set
(tests/data/guard/*.yaml: PPO and AD updates, EnvGen cycles with the LLM, heuristic,
random, SFL and PLR designers, Crafter under the stock and the authors' world rules,
Heist) twice
through the command line, `envgen run`, in subprocesses: once with this tree's code and
once with the code of the commit that last changed the value of that config's results
key (extracted with `git archive` into a temporary directory and put first on
PYTHONPATH). Per key, not per file: with one reference for all, a Crafter behaviour
change committed together with a Heist bump compared the tree with itself and passed.
The outputs must be identical, timing fields aside, unless the key's version changed
since its reference. Driving both sides through the command line keeps the guard
working when modules move or are renamed.
"""

from __future__ import annotations

import ast
import gzip
import json
import os
import subprocess
import sys
import tarfile
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from envgen.results_version import version_key
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


def reference_commits(repo: Path = REPO) -> tuple[dict[str, str] | None, str]:
    """({results key: the commit that last changed that key's value}, "") for the keys of
    the latest committed version mapping, or (None, why they are unknown).

    Per key: a commit that bumps one key is no reference for another, or a Crafter
    behaviour change committed with a Heist bump would compare the tree with itself and
    pass. The versions are compared as parsed values, not as the file's bytes: a commit
    that touches the file without changing a key's number (a comment, a reformat) is no
    reference for it either. Walking back over the commits that touched the file, a
    key's reference is the oldest of the newest commits whose value of it equals the
    latest committed one.

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
    if latest is None:
        return None, f"{VERSION_FILE} at {commits[0][:10]} holds no literal RESULTS_VERSION"
    references: dict[str, str] = {}
    open_keys = set(latest)
    for commit in commits:
        if commit in cut:
            return None, (
                f"shallow clone cut at {commit[:10]}, so the commit that last changed "
                f"{', '.join(sorted(open_keys))} in {VERSION_FILE} is unknown "
                "(git fetch --unshallow)"
            )
        versions = versions_at(commit, repo) or {}
        for key in list(open_keys):
            if key not in versions or versions[key] != latest[key]:
                open_keys.discard(key)
            else:
                references[key] = commit
        if not open_keys:
            break
    return references, ""


def tree_versions(repo: Path = REPO) -> dict[str, int] | None:
    """The RESULTS_VERSION mapping of the working tree's version file."""
    return _parsed_versions((repo / VERSION_FILE).read_text())


def versions_at(commit: str, repo: Path = REPO) -> dict[str, int] | None:
    """The RESULTS_VERSION mapping of the version file at `commit`, parsed, not run (None
    where the file holds no such literal mapping)."""
    try:
        return _parsed_versions(_git("show", f"{commit}:{VERSION_FILE}", repo=repo))
    except subprocess.CalledProcessError:
        return None


def _parsed_versions(text: str) -> dict[str, int] | None:
    try:
        tree = ast.parse(text)
    except SyntaxError:
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


def extract(commit: str, dest: Path, repo: Path = REPO) -> Path:
    """The package `envgen/` of `commit`, unpacked under `dest`."""
    dest.mkdir(parents=True, exist_ok=True)
    archive = dest / "ref.tar"
    with archive.open("wb") as f:
        subprocess.run(
            ["git", "-C", str(repo), "archive", "--format=tar", commit, "envgen"],
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
    assert reference_commits(origin) == ({"crafter": first}, "")
    # depth 2 stops at `first` itself: whether it changed the file cannot be told either
    for depth, expected in ((3, first), (2, None), (1, None)):
        clone = tmp_path / f"depth-{depth}"
        subprocess.run(
            ["git", "clone", "-q", f"--depth={depth}", origin.as_uri(), str(clone)], check=True
        )
        found, why = reference_commits(clone)
        assert found == (None if expected is None else {"crafter": expected})
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
    references, why = reference_commits(repo)
    assert (references, why) == ({"crafter": first, "heist": first}, "")
    reference = references["crafter"]
    assert versions_at(reference, repo) == {"crafter": 1, "heist": 1}  # not bumped: the
    # guard runs the old scoring against the new one and fails on the difference
    assert "1.5" not in _git("show", f"{reference}:envgen/scoring.py", repo=repo)
    version.write_text('RESULTS_VERSION: dict[str, int] = {"crafter": 2, "heist": 1}\n')
    bump = commit("a real bump")
    version.write_text('RESULTS_VERSION: dict[str, int] = {"crafter": 2, "heist": 1}  # ok\n')
    commit("a comment after the bump")
    assert reference_commits(repo) == ({"crafter": bump, "heist": first}, "")


def test_a_bump_of_one_key_leaves_the_guard_on_for_the_others(tmp_path):
    """`score * 1.5` in the Crafter scoring committed with `"heist": 1 -> 2`: one
    reference for all keys was that commit itself, so the guard compared the tree with
    itself and every Crafter run stayed current. Crafter's reference stays the commit
    that set its value, and the guard names the Crafter case."""
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
    (repo / "envgen" / "__init__.py").write_text("")
    version.write_text('RESULTS_VERSION = {"crafter": 1, "heist": 1}\n')
    scoring.write_text("def score(x):\n    return x\n")
    first = commit("versions 1")
    version.write_text('RESULTS_VERSION = {"crafter": 1, "heist": 2}\n')
    scoring.write_text("def score(x):\n    return x * 1.5\n")
    bump = commit("score * 1.5 in Crafter, committed with a Heist bump")
    assert reference_commits(repo) == ({"crafter": first, "heist": bump}, "")

    def produce(code_root: Path, case: str) -> Path:
        out = tmp_path / "out" / code_root.name / case
        out.mkdir(parents=True)
        code = (
            "import json; from envgen.scoring import score; print(json.dumps({'score': score(2)}))"
        )
        done = subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "PYTHONPATH": str(code_root)},
            cwd=out,  # `python -c` puts the working directory first on sys.path
        )
        (out / "final_metrics.json").write_text(done.stdout)
        return out

    problems = guard_problems(
        {"crafter_run": "crafter", "heist_run": "heist"}, produce, tmp_path, repo
    )
    assert len(problems) == 1, problems
    assert problems[0].startswith("crafter_run: final_metrics.json: score differ")
    assert f"since {first[:10]}" in problems[0] and "RESULTS_VERSION['crafter']" in problems[0]


def guard_problems(
    cases: dict[str, str],
    produce: Callable[[Path, str], Path],
    work: Path,
    repo: Path = REPO,
    warm: str | None = None,
    own_references: dict[str, str] | None = None,
) -> list[str]:
    """One line per case (name -> results key) whose output with this tree's code
    (`produce(repo, case)`) differs from its output with the code of its key's reference
    commit (`produce(extracted tree, case)`, `reference_commits`) while the key's version
    did not change since that reference. `own_references` (case -> commit) replaces the
    key's reference of a case whose code is younger than it (`newer_designers`). `warm`,
    a case, runs first alone on its key's
    reference tree: that tree's numba cache starts cold, and two runs at once each
    compiled it. `pytest.skip` when the references are unknown (no or shallow history).
    """
    references, why = reference_commits(repo)
    if references is None:
        pytest.skip(f"{why}: the guard needs the commits that set the results versions")
    current = tree_versions(repo) or {}
    own = own_references or {}

    def reference_of(case: str) -> str | None:
        return own.get(case) or references.get(cases[case])

    trees = {
        commit: extract(commit, work / f"reference-{commit[:10]}", repo)
        for commit in sorted({c for c in map(reference_of, cases) if c is not None})
    }

    def theirs(case: str) -> Path | None:
        commit = reference_of(case)
        return None if commit is None else produce(trees[commit], case)

    if warm is not None:
        theirs(warm)
    with ThreadPoolExecutor(max_workers=2) as pool:
        ours = dict(zip(cases, pool.map(lambda c: produce(repo, c), cases), strict=True))
        reference = dict(zip(cases, pool.map(theirs, cases), strict=True))
    problems = []
    for case, key in cases.items():
        commit = reference_of(case)
        if commit is None or current.get(key) != (versions_at(commit, repo) or {}).get(key):
            continue  # a key new or bumped since its reference: any behaviour is allowed
        difference = first_difference(ours[case], reference[case])
        if difference:
            problems.append(
                f"{case}: {difference}: behaviour changed since {commit[:10]} (the commit "
                f"that last changed RESULTS_VERSION[{key!r}]) without a version bump; raise "
                f"RESULTS_VERSION[{key!r}] in {VERSION_FILE} (then retrain or keep the "
                "committed runs as another version's)"
            )
    return problems


# Guard configs of designers added after their results key was last set: the key's
# reference commit cannot run them, so each is compared with the code of the commit that
# last changed its file (the tree's HEAD while the file is not committed yet). A change
# to their rollouts without a bump then fails like any other.
NEWER_DESIGNERS = ("envgen_sfl", "envgen_plr")


def newer_designers(configs: dict[str, Path], repo: Path = REPO) -> dict[str, str]:
    """{case: the commit that last changed its guard file, or HEAD} of NEWER_DESIGNERS."""
    own = {}
    for case in NEWER_DESIGNERS:
        path = configs[case].relative_to(repo).as_posix()
        own[case] = _git("log", "-1", "--format=%H", "--", path, repo=repo) or _git(
            "rev-parse", "HEAD", repo=repo
        )
    return own


def _results_key(config: Path) -> str:
    """The results key of a guard config's runs (`version_key`)."""
    from envgen.loop.config import RunConfig

    run = RunConfig.from_yaml(config)
    return version_key(run.game, run.llm_adapts)


@pytest.mark.slow
def test_behaviour_is_unchanged_unless_the_results_version_is_bumped(tmp_path):
    configs = {config.stem: config for config in GUARD_CONFIGS}

    def produce(code_root: Path, case: str) -> Path:
        # One config runs our side's envs in a worker process too (forked from the
        # preloaded forkserver, envgen/envs/worker_preload.py) against the reference's
        # single process: the worker count must change no number either.
        ours = code_root == REPO
        workers = 2 if ours and case == FORKED_WORKERS else 1
        side = "ours" if ours else code_root.name
        return run_side(code_root, tmp_path / side / case, configs[case], workers)

    cases = {stem: _results_key(config) for stem, config in configs.items()}
    # `envgen run` keeps the warm run's finished output when `produce` asks again.
    problems = guard_problems(
        cases,
        produce,
        tmp_path,
        warm="envgen_random_authors",
        own_references=newer_designers(configs),
    )
    assert not problems, "\n".join(problems)


def test_every_designer_the_registry_holds_has_a_guard_config():
    from envgen.loop.config import DESIGNERS, RunConfig

    guarded = {RunConfig.from_yaml(c).designer for c in GUARD_CONFIGS}
    assert set(DESIGNERS) <= guarded, f"no guard config for {set(DESIGNERS) - guarded}"
    assert set(NEWER_DESIGNERS) <= {c.stem for c in GUARD_CONFIGS}
