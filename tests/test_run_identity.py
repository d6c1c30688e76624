"""A run is checked against its folder's name, a runs.json against its plan, and every
reported number against the logs: swapped, linked or forged runs are named (issue 41)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from envgen.errors import EnvGenError
from envgen.evidence.checks import check_run_store
from envgen.loop.identity import RunIdentityError, check_identity
from envgen.store import seal_run
from envgen.store.manifest import is_sealed

REPO = Path(__file__).resolve().parents[1]
RUNS = REPO / "results" / "runs"
CRAFTER_ONLY, DOMAIN_RANDOM = "ca3d42bc0a83", "7b838eba3c35"  # campaign_confirm's two arms
LLM_RUN = "ee3aec67a90e/seed-0"  # AD + EnvGen (table1, smoke): 4 LLM calls
RANDOM_RUN = "random-8ep/seed-0"


def copy_run(rel: str, runs_root: Path, as_rel: str | None = None) -> Path:
    target = runs_root / (as_rel or rel)
    shutil.copytree(RUNS / rel, target)
    return target


def test_every_committed_run_is_the_run_its_folder_names():
    """Sealed runs only: a campaign's run in training beside the tests has no final files."""
    sealed = [d for d in sorted(RUNS.glob("*/seed-*")) if is_sealed(d)]
    assert len(sealed) > 100
    for run_dir in sealed:
        check_identity(run_dir)


def test_a_run_swapped_into_another_runs_folder_is_named(tmp_path):
    """Crafter-only seed 19 replaced by the domain-randomization seed-19 run."""
    runs = tmp_path / "runs"
    copy_run(f"{DOMAIN_RANDOM}/seed-19", runs)
    swapped = copy_run(f"{DOMAIN_RANDOM}/seed-19", runs, f"{CRAFTER_ONLY}/seed-19")
    with pytest.raises(RunIdentityError) as err:
        check_identity(swapped)
    assert f"{swapped}/run.yaml: its config hashes to {DOMAIN_RANDOM!r}" in str(err.value)
    check = check_run_store(runs, listed=[swapped])
    assert not check.ok and str(swapped) in check.detail and "hashes to" in check.detail


def test_a_run_moved_to_another_seed_or_its_final_metrics_swapped_is_named(tmp_path):
    runs = tmp_path / "runs"
    moved = copy_run(f"{CRAFTER_ONLY}/seed-18", runs, f"{CRAFTER_ONLY}/seed-19")
    with pytest.raises(RunIdentityError, match="its seed is 18"):
        check_identity(moved)
    mixed = copy_run(f"{CRAFTER_ONLY}/seed-17", runs)
    shutil.copy(RUNS / DOMAIN_RANDOM / "seed-17" / "final_metrics.json", mixed)
    seal_run(mixed)  # the manifest rewritten to match: only the identity can tell
    with pytest.raises(RunIdentityError) as err:
        check_identity(mixed)
    assert f"{mixed}/final_metrics.json: config_hash is {DOMAIN_RANDOM!r}" in str(err.value)


@pytest.mark.parametrize("link", ["seed folder", "hash folder", "file"])
def test_symlinked_runs_are_refused(tmp_path, link):
    runs = tmp_path / "runs"
    real = copy_run(f"{CRAFTER_ONLY}/seed-19", tmp_path / "elsewhere")
    if link == "seed folder":
        (runs / CRAFTER_ONLY).mkdir(parents=True)
        (runs / CRAFTER_ONLY / "seed-19").symlink_to(real)
    elif link == "hash folder":
        runs.mkdir()
        (runs / CRAFTER_ONLY).symlink_to(real.parent)
    else:
        shutil.copytree(real, runs / CRAFTER_ONLY / "seed-19")
        target = runs / CRAFTER_ONLY / "seed-19" / "episodes.jsonl.gz"
        target.unlink()
        target.symlink_to(real / "episodes.jsonl.gz")
    run_dir = runs / CRAFTER_ONLY / "seed-19"
    with pytest.raises(RunIdentityError, match="symbolic link"):
        check_identity(run_dir)
    check = check_run_store(runs, listed=[run_dir])
    assert not check.ok and "symbolic link" in check.detail


def test_a_random_policy_run_is_checked_by_its_folder(tmp_path):
    runs = tmp_path / "runs"
    check_identity(copy_run(RANDOM_RUN, runs))
    wrong = copy_run(RANDOM_RUN, runs, "random-9ep/seed-0")
    with pytest.raises(RunIdentityError, match="episodes is 8"):
        check_identity(wrong)
    with pytest.raises(RunIdentityError, match="seed is 0"):
        check_identity(copy_run(RANDOM_RUN, runs, "random-8ep/seed-1"))


# --- every reported field re-derived ------------------------------------------------------
def forge(run_dir: Path, name: str, change) -> None:
    path = run_dir / name
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data, indent=2))
    seal_run(run_dir)  # the manifest updated too


FORGERIES = {
    "llm_replay": lambda f: f["llm_replay"].update(slot=0, exact=4, max_drift=0.0),
    "llm_calls": lambda f: f.update(llm_calls=24),
    "global_steps": lambda f: f.update(global_steps=1_960_000),
    "score": lambda f: f.update(score=f["score"] * 1.5),
    "episodes": lambda f: f.update(episodes=f["episodes"] + 1),
}


@pytest.mark.parametrize("field", sorted(FORGERIES))
def test_a_forged_field_with_a_matching_manifest_is_named(tmp_path, field):
    run_dir = copy_run(LLM_RUN, tmp_path / "runs")
    calls = json.loads((run_dir / "llm_calls.json").read_text())
    for call in calls[1:]:  # served by slot with drift, as a run on another CPU would be
        call.update(served="slot", drift={**call["drift"], "max_abs": 22.0, "differing": 3})
    (run_dir / "llm_calls.json").write_text(json.dumps(calls))

    def replayed(accounting):  # every call served from the cache, as in that replay
        accounting["cache_hits"] = len(calls)
        for model in accounting.get("models", {}).values():
            model["cache_hits"] = model["calls"]

    forge(run_dir, "llm_accounting.json", replayed)
    forge(run_dir, "final_metrics.json", lambda f: f.update(llm_replay=_replay(calls)))
    assert check_run_store(tmp_path / "runs", cache_dir=REPO / "data" / "llm_cache").ok
    forge(run_dir, "final_metrics.json", FORGERIES[field])
    check = check_run_store(tmp_path / "runs")
    assert not check.ok
    assert check.detail.startswith(f"{run_dir}/final_metrics.json: {field} is"), check.detail


def _replay(calls):
    from envgen.llm.slots import summarize_calls

    return summarize_calls(calls)


@pytest.mark.parametrize("field", ["calls", "cache_hits", "prompt_tokens"])
def test_forged_llm_accounting_is_named(tmp_path, field):
    run_dir = copy_run(LLM_RUN, tmp_path / "runs")
    forge(run_dir, "llm_accounting.json", lambda a: a.update({field: a[field] + 100}))
    check = check_run_store(tmp_path / "runs", cache_dir=REPO / "data" / "llm_cache")
    assert not check.ok
    assert check.detail.startswith(f"{run_dir}/llm_accounting.json: {field} is"), check.detail


def test_a_listed_run_of_another_results_version_is_named(tmp_path):
    run_dir = copy_run(LLM_RUN, tmp_path / "runs")
    forge(run_dir, "provenance.json", lambda p: p.update(results_version=0))
    assert check_run_store(tmp_path / "runs").ok  # in the store, unused: left to the pipeline
    check = check_run_store(tmp_path / "runs", listed=[run_dir])
    assert not check.ok and check.detail.startswith(f"{run_dir}: results version 0")


# --- runs.json against the plan -----------------------------------------------------------
@pytest.fixture
def at_repo(monkeypatch):
    monkeypatch.chdir(REPO)


def table(name: str) -> dict:
    return json.loads((REPO / "results" / name / "runs.json").read_text())


def test_the_committed_runs_json_files_match_their_plans(at_repo):
    from envgen.evidence.verify_plan import plan_differences

    for name in ("table1", "table8", "campaign_confirm"):
        path = Path("results") / name / "runs.json"
        assert plan_differences(path, table(name), Path("results/runs")) is None


def test_a_row_pointed_at_another_rows_runs_is_named(at_repo):
    """table1's PPO row pointing at PPO + EnvGen's folders (entries and all)."""
    from envgen.evidence.verify_plan import plan_differences

    data = table("table1")
    rows = {row["row"]: row for row in data["rows"]}
    rows["PPO"]["runs"] = json.loads(json.dumps(rows["PPO + EnvGen"]["runs"]))
    problem = plan_differences(Path("results/table1/runs.json"), data, Path("results/runs"))
    assert problem is not None and "row 'PPO'" in problem
    assert f"lists results/runs/{rows['PPO + EnvGen']['config_hash']}/seed-0" in problem


def test_a_campaign_row_that_drops_or_doubles_a_seed_is_named(at_repo):
    from envgen.evidence.verify_plan import plan_differences

    path = Path("results/campaign_confirm/runs.json")
    data = table("campaign_confirm")
    row = data["rows"][0]
    dropped = row["runs"].pop(3)
    problem = plan_differences(path, data, Path("results/runs"))
    assert "leaves out the finished run" in problem and dropped["run_dir"] in problem
    row["runs"].insert(3, data["rows"][1]["runs"][14])  # the other arm's seed 19
    assert "is not a finished run of this row" in plan_differences(path, data, Path("results/runs"))


def test_the_pipeline_refuses_a_swapped_run_in_its_runs_json(tmp_path):
    from envgen.pipeline.results import run_entry

    runs = tmp_path / "runs"
    swapped = copy_run(f"{DOMAIN_RANDOM}/seed-19", runs, f"{CRAFTER_ONLY}/seed-19")
    with pytest.raises(EnvGenError, match="hashes to"):
        run_entry(swapped, 19, 0, CRAFTER_ONLY, "crafter")
    assert os.path.isdir(swapped)  # named, never deleted
