"""A registration's order in git (`envgen.evidence.history`, `envgen verify`'s check 6)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from envgen.evidence.history import registration_order

DOC = "docs/campaign_x.md"


def _commit(repo: Path, path: str | None, message: str) -> None:
    """Write `path` (None: every file already there) and commit it in `repo`."""
    if path is not None:
        target = repo / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(message)
    subprocess.run(["git", "-C", str(repo), "add", path or "."], check=True)
    subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
        + ["commit", "-qm", message],
        check=True,
    )


def _repo(tmp_path: Path) -> Path:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    return tmp_path


def test_runs_committed_after_their_registration_pass(tmp_path):
    repo = _repo(tmp_path)
    _commit(repo, DOC, "registration")
    _commit(repo, "results/runs/h/seed-1/final_metrics.json", "run 1")
    _commit(repo, "results/runs/h/seed-2/final_metrics.json", "run 2")
    order = registration_order(repo, DOC, ["results/runs/h/seed-1", "results/runs/h/seed-2"])
    assert order.problem is None and order.unknown is None and order.runs == 2


def test_a_run_committed_before_or_with_the_registration_is_named(tmp_path):
    repo = _repo(tmp_path)
    _commit(repo, "results/runs/h/seed-1/final_metrics.json", "run first")
    _commit(repo, DOC, "registration after the data")
    _commit(repo, "results/runs/h/seed-2/final_metrics.json", "run 2")
    order = registration_order(repo, DOC, ["results/runs/h/seed-2", "results/runs/h/seed-1"])
    assert order.problem is not None and order.problem.startswith("results/runs/h/seed-1 was")
    # A run committed in the registration's own commit does not come after it either.
    other = tmp_path / "fresh"
    subprocess.run(["git", "init", "-q", str(other)], check=True)
    (other / "results/runs/h/seed-3").mkdir(parents=True)
    (other / "results/runs/h/seed-3/x").write_text("x")
    (other / "docs").mkdir()
    (other / DOC).write_text("registration")
    _commit(other, None, "one commit")
    order = registration_order(other, DOC, ["results/runs/h/seed-3"])
    assert order.problem is not None and "does not come after" in order.problem


def test_an_uncommitted_run_is_named_and_a_tree_without_history_is_not_checked(tmp_path):
    repo = _repo(tmp_path / "repo")
    _commit(repo, DOC, "registration")
    order = registration_order(repo, DOC, ["results/runs/h/seed-9"])
    assert order.problem == "results/runs/h/seed-9 is in no commit; commit it"

    bare_tree = tmp_path / "export"
    bare_tree.mkdir()
    order = registration_order(bare_tree, DOC, ["results/runs/h/seed-1"])
    assert order.unknown is not None and order.problem is None

    shallow = tmp_path / "shallow"
    _commit(repo, "results/runs/h/seed-1/x", "run")
    subprocess.run(
        ["git", "clone", "-q", "--depth", "1", f"file://{repo}", str(shallow)], check=True
    )
    order = registration_order(shallow, DOC, ["results/runs/h/seed-1"])
    assert order.unknown is not None and "shallow" in order.unknown and order.shallow
    assert not registration_order(bare_tree, DOC, []).shallow  # no fetch brings it


def test_verify_fails_on_a_shallow_clone_saying_the_history_is_needed(tmp_path):
    """A `--depth 1` clone cannot show a registration's order: the check's own line says
    "not checked" and why, and verify's summary names the fix and exits 1 (it exited 0)."""
    from envgen.evidence.checks import Check, check_registrations
    from envgen.evidence.verify import summary

    repo = _repo(tmp_path / "repo")
    _commit(repo, DOC, "registration")
    _commit(repo, "results/runs/h/seed-1/x", "run")
    shallow = tmp_path / "shallow"
    subprocess.run(
        ["git", "clone", "-q", "--depth", "1", f"file://{repo}", str(shallow)], check=True
    )
    runs = Path(__file__).resolve().parents[1] / "results/campaign_sfl/runs.json"
    checks = check_registrations([runs], repo=shallow)
    assert [c.line() for c in checks] == [
        "campaign_sfl registration: not checked (a shallow clone: `git fetch --unshallow` "
        "brings the history to check)"
    ]
    matched = Check("table1", True, "ok")
    text, code = summary([matched, *checks])
    assert code == 1
    assert text.splitlines() == [
        "1 of 2 checks match; 1 not checked here",
        "history needed: git fetch --unshallow (not checked here: campaign_sfl registration)",
    ]
    # outside git (an exported tree) the check counts neither way, as before
    (tmp_path / "export").mkdir()
    assert check_registrations([runs], repo=tmp_path / "export")[0].needed is None
    unknown = Check("campaign_sfl registration", True, "not a git checkout", checked=False)
    assert summary([matched, unknown]) == ("1 of 2 checks match; 1 not checked here", 0)
    assert summary([matched, Check("table2", False, "x")])[1] == 1
    assert summary([matched]) == ("1 of 1 checks match", 0)


def test_verify_checks_every_registered_campaign_of_this_repository():
    from envgen.evidence.checks import check_registrations
    from envgen.report.inputs import runs_json_files

    checks = check_registrations(runs_json_files())
    assert {c.name for c in checks} == {
        "campaign_confirm registration",
        "campaign_llm15 registration",
        "campaign_sfl registration",
        "campaign_headline registration",
    }
    assert all(c.ok for c in checks), [c.line() for c in checks]
