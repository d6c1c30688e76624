"""`envgen verify` on the committed results: passes as committed, names any tampering."""

from __future__ import annotations

import gzip
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
COPIED = ("dvc.yaml", "params.yaml", "replication", "results", "data", "README.md", "docs")


@pytest.fixture
def committed(tmp_path: Path) -> Path:
    """A copy of what verify reads: dvc.yaml, results/ (run store included), data/."""
    for name in COPIED:
        source = REPO / name
        if source.is_dir():
            shutil.copytree(source, tmp_path / name, ignore=shutil.ignore_patterns("checkpoints"))
        else:
            shutil.copy(source, tmp_path / name)
    return tmp_path


def verify(cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "envgen.cli", "verify"], cwd=cwd, capture_output=True, text=True
    )


@pytest.mark.slow
def test_a_number_edited_by_hand_and_a_truncated_log_are_each_named(committed):
    """(`.ci/run` runs `make verify` on the committed results themselves: they match.)"""
    table = committed / "results" / "tables" / "table1.md"
    original = table.read_text()
    table.write_text(original.replace("2.32", "2.33", 1))
    done = verify(committed)
    assert done.returncode == 1
    out = done.stdout.splitlines()
    table1 = next(line for line in out if line.startswith("table1:"))
    assert "DIFFERS" in table1 and "results/tables/table1.md line" in table1
    assert next(line for line in out if line.startswith("table2:")).startswith("table2: matches")
    assert next(line for line in out if line.startswith("run store:")).startswith(
        "run store: matches"
    )

    table.write_text(original)
    log = committed / "results" / "runs" / "ca3d42bc0a83" / "seed-1" / "episodes.jsonl.gz"
    lines = gzip.decompress(log.read_bytes()).splitlines(keepends=True)
    log.write_bytes(gzip.compress(b"".join(lines[: len(lines) // 2])))
    done = verify(committed)
    assert done.returncode == 1
    store = next(line for line in done.stdout.splitlines() if line.startswith("run store:"))
    assert "DIFFERS" in store and "ca3d42bc0a83/seed-1/episodes.jsonl.gz" in store


def test_a_run_used_by_a_table_without_its_manifest_is_named(tmp_path):
    """Without its manifest nothing checks a run's files: deleting it must not hide an edit."""
    from envgen.evidence.checks import check_run_store

    run_dir = tmp_path / "runs" / "0811a37889ce" / "seed-0"  # a committed Heist run
    shutil.copytree(REPO / "results" / "runs" / "0811a37889ce" / "seed-0", run_dir)
    assert check_run_store(tmp_path / "runs", listed=[run_dir]).ok
    (run_dir / "manifest.json").unlink()
    check = check_run_store(tmp_path / "runs", listed=[run_dir])
    assert not check.ok and check.detail.startswith(f"{run_dir}: no manifest.json")


def test_sfl_curation_steps_are_derived_from_the_rollout_files(tmp_path):
    """D4 of docs/campaign_sfl.md shows curation_steps and env_steps: a resealed run that
    claims other rollouts than its cycles' sfl_rollouts.json hold is named."""
    from envgen.evidence.checks import check_run_store
    from envgen.store.manifest import seal_run

    run_dir = tmp_path / "runs" / "544657aa9df0" / "seed-36"  # a committed SFL run
    shutil.copytree(REPO / "results" / "runs" / "544657aa9df0" / "seed-36", run_dir)
    assert check_run_store(tmp_path / "runs", listed=[run_dir]).ok
    final_path = run_dir / "final_metrics.json"
    final = json.loads(final_path.read_text())
    assert final["curation_steps"] == 4 * 32_768
    rollout = run_dir / "cycles" / "cycle-03" / "sfl_rollouts.json"
    record = json.loads(rollout.read_text())
    rollout.write_text(json.dumps({**record, "env_steps": 16_384}))
    seal_run(run_dir)  # whoever edits a number can reseal: the logs must still agree
    check = check_run_store(tmp_path / "runs", listed=[run_dir])
    assert not check.ok and "curation_steps is 131072, its logs give 114688" in check.detail
    rollout.write_text(json.dumps(record))
    final_path.write_text(json.dumps({**final, "env_steps": final["env_steps"] - 1}))
    seal_run(run_dir)
    check = check_run_store(tmp_path / "runs", listed=[run_dir])
    assert not check.ok and check.detail.endswith(f"{final['env_steps']}"), check.detail
    rollout.unlink()
    (run_dir / "cycles" / "cycle-01" / "sfl_rollouts.json").write_text("[]")
    seal_run(run_dir)
    check = check_run_store(tmp_path / "runs", listed=[run_dir])
    assert not check.ok and "sfl_rollouts.json: no whole env_steps count" in check.detail


def test_a_sealed_run_outside_the_run_store_is_found_and_checked(tmp_path):
    """A run committed elsewhere (as results/audit's) is checked as the store's: an
    edited score names it; without `tree` the store alone is searched."""
    from envgen.evidence.checks import check_run_store, sealed_runs

    store = tmp_path / "results" / "runs"
    store.mkdir(parents=True)
    run_dir = tmp_path / "results" / "audit" / "x" / "runs" / "0811a37889ce" / "seed-0"
    shutil.copytree(REPO / "results" / "runs" / "0811a37889ce" / "seed-0", run_dir)
    (tmp_path / ".hidden" / "0811a37889ce" / "seed-0").mkdir(parents=True)
    (tmp_path / ".hidden" / "0811a37889ce" / "seed-0" / "manifest.json").write_text("{}")
    assert sealed_runs(tmp_path) == [run_dir]
    check = check_run_store(store, tree=tmp_path)
    assert check.ok and "1 sealed runs (1 outside" in check.detail, check.detail
    (run_dir / "final_metrics.json").write_text('{"score": 99}')
    check = check_run_store(store, tree=tmp_path)
    assert not check.ok and check.detail.startswith(f"{run_dir}/final_metrics.json"), check
    assert check_run_store(store).ok  # the store alone: nothing there


@pytest.mark.slow
def test_an_edited_score_of_the_audits_run_fails_verify_naming_the_run(committed):
    """Issue 55, case 3: docs quote this run's 14.26; its final metrics edited by hand."""
    run = "results/audit/crafter_only_retrain/runs/ca3d42bc0a83/seed-1"
    (committed / run / "final_metrics.json").write_text('{"score": 99}')
    done = verify(committed)
    assert done.returncode == 1
    store = next(line for line in done.stdout.splitlines() if line.startswith("run store:"))
    assert "DIFFERS" in store and f"{run}/final_metrics.json" in store, store


@pytest.mark.parametrize(("content", "words"), [(b"[1]", "holds a list"), (b"\xff{", "not JSON")])
def test_a_final_metrics_that_is_not_a_mapping_is_named(tmp_path, content, words):
    """The manifest vouches for bytes only: resealed over a list, verify still names it."""
    from envgen.evidence.checks import check_run_store
    from envgen.store import seal_run

    run_dir = tmp_path / "runs" / "0811a37889ce" / "seed-0"
    shutil.copytree(REPO / "results" / "runs" / "0811a37889ce" / "seed-0", run_dir)
    (run_dir / "final_metrics.json").write_bytes(content)
    seal_run(run_dir)
    check = check_run_store(tmp_path / "runs", listed=[run_dir])
    assert not check.ok and check.detail.startswith(f"{run_dir}/final_metrics.json: {words}")


@pytest.mark.slow
def test_a_swapped_run_and_a_forged_field_fail_verify_naming_the_run(committed):
    """Crafter-only seed 19 replaced by the domain-randomization seed-19 run; then, restored,
    an LLM run's llm_replay forged with its manifest rewritten to match."""
    from envgen.store import seal_run

    runs = committed / "results" / "runs"
    swapped = runs / "ca3d42bc0a83" / "seed-19"
    shutil.rmtree(swapped)
    shutil.copytree(runs / "7b838eba3c35" / "seed-19", swapped)
    done = verify(committed)
    assert done.returncode == 1
    store = next(line for line in done.stdout.splitlines() if line.startswith("run store:"))
    assert "DIFFERS" in store and "ca3d42bc0a83/seed-19/run.yaml: its config hashes to" in store

    shutil.rmtree(swapped)
    shutil.copytree(REPO / "results" / "runs" / "ca3d42bc0a83" / "seed-19", swapped)
    forged = runs / "ee3aec67a90e" / "seed-0"
    final = json.loads((forged / "final_metrics.json").read_text())
    final["llm_replay"]["exact"] = 24
    (forged / "final_metrics.json").write_text(json.dumps(final))
    seal_run(forged)
    done = verify(committed)
    assert done.returncode == 1
    store = next(line for line in done.stdout.splitlines() if line.startswith("run store:"))
    assert "ee3aec67a90e/seed-0/final_metrics.json: llm_replay is" in store


def test_a_registered_campaign_in_progress_may_lag_its_store_but_not_invent_runs():
    """A campaign commits a run at a time between `make repro`s: while it shows run counts
    only (docs/campaign_llm15.md, "No peeking"), its runs.json may leave out runs finished
    since it was collected; a run it lists must still be a finished run of the plan."""
    from envgen.evidence.verify_plan import plan_differences

    path = Path("results/campaign_llm15/runs.json")
    table = json.loads(path.read_text())
    row = next(r for r in table["rows"] if len(r["runs"]) >= 2)
    dropped = row["runs"].pop()
    assert plan_differences(path, table, Path("results/runs"), lagging_ok=True) is None
    problem = plan_differences(path, table, Path("results/runs"))
    assert problem is not None and "leaves out the finished run" in problem
    row["runs"].append({**dropped, "seed": 99})  # not a finished run of the plan
    problem = plan_differences(path, table, Path("results/runs"), lagging_ok=True)
    assert problem is not None and "seed-99" in problem


def test_sfl_runs_json_refuses_a_finished_dr_run_of_another_campaigns_seeds():
    """sfl's DR arm shares its config (7b838eba3c35) with llm15's: llm15's finished seed-20
    run, entry and all, listed in sfl's runs.json is not a run of sfl's plan (seeds
    36-55), and verify names it."""
    from envgen.evidence.verify_plan import plan_differences

    path = Path("results/campaign_sfl/runs.json")
    table = json.loads(path.read_text())
    llm15 = json.loads(Path("results/campaign_llm15/runs.json").read_text())
    dr = next(r for r in table["rows"] if r["config_hash"] == "7b838eba3c35")
    other = next(r for r in llm15["rows"] if r["config_hash"] == "7b838eba3c35")
    seed20 = next(run for run in other["runs"] if run["seed"] == 20)
    assert Path(seed20["run_dir"], "manifest.json").is_file()  # a real finished run
    assert plan_differences(path, table, Path("results/runs"), lagging_ok=True) is None
    dr["runs"][0] = seed20
    problem = plan_differences(path, table, Path("results/runs"), lagging_ok=True)
    assert problem is not None and "seed-20" in problem, problem


def test_one_bad_run_fails_only_its_own_tables_line(tmp_path, monkeypatch):
    """A run of table1 that cannot be read fails table1's line naming it; table2 is still
    checked, and matches (it once took every table, the summary and CLAIMS.md down into
    one `report` line)."""
    from envgen.errors import EnvGenError
    from envgen.evidence import checks

    table1, table2 = Path("results/table1/runs.json"), Path("results/table2/runs.json")
    bad = Path(json.loads(table1.read_text())["rows"][0]["runs"][0]["run_dir"])
    real = checks.run_entry

    def run_entry(run_dir: Path, *args):
        if run_dir == bad:
            raise EnvGenError(f"{run_dir}/episodes.jsonl.gz: damaged")
        return real(run_dir, *args)

    monkeypatch.setattr(checks, "run_entry", run_entry)
    found = {c.name: c for c in checks.check_tables([table1, table2], tmp_path)}
    assert not found["table1"].ok and f"{bad}/episodes.jsonl.gz" in found["table1"].detail
    assert found["table2"].ok, found["table2"].detail
    assert {"summary metrics", "CLAIMS.md"} <= set(found)
