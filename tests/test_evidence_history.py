"""`make verify` ties committed evidence to the commit that added it
(`envgen.evidence.history`): a consistently forged or swapped run, committed, is named
with its commit; a registration edited above its Deviations is named unless disclosed;
a checkout without history fails with "history needed"."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from envgen.evidence import history
from tests.test_numerics import GOLDEN, forge


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def commit(repo: Path, message: str) -> str:
    git(repo, "add", "-A")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD")


@pytest.fixture()
def repo(tmp_path) -> Path:
    """A git repository holding two committed copies of a real sealed run."""
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q")
    for seed in (3, 4):
        shutil.copytree(GOLDEN, root / "results" / "runs" / "b6762fdd799b" / f"seed-{seed}")
    commit(root, "two runs")
    return root


def test_committed_runs_as_added_pass(repo):
    assert history.run_changes(repo) == ([], 2, 0)


def test_a_forged_and_committed_run_is_named_with_its_commit(repo):
    forge(repo / "results/runs/b6762fdd799b/seed-3")
    forged = commit(repo, "forged")
    problems, _, _ = history.run_changes(repo)
    assert len(problems) == 1
    assert problems[0].startswith("results/runs/b6762fdd799b/seed-3: its manifest changed in")
    assert forged[:10] in problems[0]


def test_two_runs_changed_in_one_commit_as_a_swap_are_both_named(repo):
    runs = repo / "results/runs/b6762fdd799b"
    for seed in (3, 4):  # each run's logs replaced by the other's, both resealed
        forge(runs / f"seed-{seed}")
    commit(repo, "swap")
    problems, _, _ = history.run_changes(repo)
    assert [p.split(":")[0] for p in problems] == [
        "results/runs/b6762fdd799b/seed-3",
        "results/runs/b6762fdd799b/seed-4",
    ]


def test_an_uncommitted_edit_is_named(repo):
    forge(repo / "results/runs/b6762fdd799b/seed-4")
    (problem,) = history.run_changes(repo)[0]
    assert "seed-4" in problem and "uncommitted" in problem


def test_a_recorded_change_passes_and_must_name_the_run(repo):
    forge(repo / "results/runs/b6762fdd799b/seed-3")
    changed = commit(repo, "a migration")
    record = repo / history.RUN_CHANGES
    record.write_text(
        "changes:\n"
        f"  - commit: '{changed[:8]}'\n"  # quoted: an all-digit prefix is YAML's int
        "    why: the test's migration\n"
        "    paths: [results/runs/b6762fdd799b/seed-4]\n"
    )
    assert history.run_changes(repo)[0]  # names another run: still a problem
    record.write_text(record.read_text().replace("seed-4", "seed-3"))
    assert history.run_changes(repo)[0] == []


REGISTRATION = """# Registration

H1: a > b, one-sided Welch.

## Deviations
"""


def test_a_registration_edited_above_deviations_fails_until_disclosed(tmp_path):
    root = tmp_path / "reg"
    (root / "docs").mkdir(parents=True)
    git(root, "init", "-q")
    doc = root / "docs/campaign_x.md"
    doc.write_text(REGISTRATION)
    commit(root, "registration")
    doc.write_text(REGISTRATION + "- a dated entry below the heading is free.\n")
    commit(root, "a deviation")
    assert history.registration_changes("docs/campaign_x.md", root) is None
    doc.write_text(doc.read_text().replace("a > b", "a >= b"))
    edited = commit(root, "edit H1")
    problem = history.registration_changes("docs/campaign_x.md", root)
    assert problem is not None and edited[:10] in problem and "'H1: a > b" in problem
    doc.write_text(doc.read_text() + f"- {edited[:7]} changed H1's words, disclosed here.\n")
    commit(root, "disclose")
    assert history.registration_changes("docs/campaign_x.md", root) is None
    doc.write_text(doc.read_text().replace("Welch", "Student"))  # not committed
    assert "uncommitted change" in history.registration_changes("docs/campaign_x.md", root)


def test_a_shallow_clone_needs_history(repo, tmp_path):
    assert history.history_missing(repo) is None
    shallow = tmp_path / "shallow"
    done = subprocess.run(
        ["git", "clone", "-q", "--depth", "1", f"file://{repo}", str(shallow)],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert history.history_missing(shallow) == history.HISTORY_NEEDED
    assert "not a git checkout" in history.history_missing(tmp_path)


def test_a_malformed_change_record_is_one_line(repo):
    (repo / history.RUN_CHANGES).parent.mkdir(parents=True, exist_ok=True)
    (repo / history.RUN_CHANGES).write_text("changes:\n  - commit: zz\n")
    with pytest.raises(Exception, match="changes\\[0\\]"):
        history.recorded_changes(repo)


def test_an_edited_audit_record_is_named_with_its_commit(repo):
    record = repo / "results/audit/reproduce/campaign_x.json"
    record.parent.mkdir(parents=True)
    record.write_text('{"runs": [{"identical": false}]}\n')
    commit(repo, "an audit")
    record.write_text('{"runs": [{"identical": true}]}\n')
    edited = commit(repo, "1 of 1 identical now")
    (problem,) = history.run_changes(repo)[0]
    assert problem.startswith("results/audit/reproduce/campaign_x.json: it changed in")
    assert edited[:10] in problem


def test_an_edited_cached_reply_is_named_but_new_slots_are_not(repo):
    cache = repo / history.LLM_CACHE
    cache.mkdir(parents=True)
    reply = cache / "ab12.json"
    record = {"key": "ab12", "request": "{}", "response": "{'text': 'a'}", "slots": ["s1"]}
    reply.write_text(json.dumps(record))
    commit(repo, "a reply")
    reply.write_text(json.dumps({**record, "slots": ["s1", "s2"]}))
    commit(repo, "another run files its slot")
    assert history.cache_changes(repo) == ([], 1)
    reply.write_text(json.dumps({**record, "response": "{'text': 'b'}"}))
    edited = commit(repo, "a better reply")
    (problem,) = history.cache_changes(repo)[0]
    assert "'response' differs" in problem and edited[:10] not in problem


def test_a_run_above_its_step_budget_is_named(tmp_path):
    from envgen.evidence.checks import over_budget

    run = tmp_path / "b6762fdd799b" / "seed-3"
    shutil.copytree(GOLDEN, run)
    final = json.loads((run / "final_metrics.json").read_text())
    assert over_budget(run, final) is None
    final["global_steps"] += 10 * 64  # 10 rollouts of the tiny run's 2 x 32 more
    assert "env steps, above the" in over_budget(run, final)


def test_a_truncated_gzip_log_is_named_as_that_runs_log(tmp_path):
    from envgen.agents.runlog import read_jsonl
    from envgen.errors import EnvGenError

    run = tmp_path / "b6762fdd799b" / "seed-3"
    shutil.copytree(GOLDEN, run)
    gz = run / "episodes.jsonl.gz"
    gz.write_bytes(gz.read_bytes()[:-20])
    (run / "manifest.json").unlink()  # resealed around the damage, as an import might
    with pytest.raises(EnvGenError, match="episodes.jsonl.gz: a damaged gzip log"):
        read_jsonl(run / "episodes.jsonl")
