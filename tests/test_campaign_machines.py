"""`envgen campaign start|status` say per row what they reuse: runs done (committed or
not), partial runs resumed, their CPU classes and numerics, and warn on a mix
(`envgen.campaign.machines`). The run store is a few fake run directories: nothing
trains, nothing is launched."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import yaml

from envgen.campaign import process
from envgen.campaign import run as campaign_run
from envgen.campaign.machines import cpu_classes, reuse_lines, row_reuse
from envgen.campaign.registry import campaigns
from envgen.campaign.run import load_campaign
from envgen.pipeline.job_status import job_dir, job_version_key, results_versions
from envgen.store import seal_run
from envgen.store.manifest import LATEST_CHECKPOINT
from tests.envgen_cli import envgen_subprocess

REPO = Path(__file__).resolve().parents[1]
CPU = campaigns()["cpu"]
AMD, INTEL = ("AMD EPYC", "AVX512"), ("Intel Xeon Platinum 8481C", "AVX512")
PPO, SCHEDULE, FIXED, RANDOM = (
    "PPO 1.96M Crafter only",
    "Heuristic designer: EnvGen schedule",
    "Heuristic designer: Fixed",
    "Domain randomization: EnvGen schedule",
)


def _session(cpu: tuple[str, str]) -> dict:
    return {"step": 0, "machine": {"cpu": cpu[0], "torch_cpu_capability": cpu[1]}}


def fake_run(run_dir: Path, version: int, cpus, numerics=None, finished=True) -> None:
    """A run directory as `start` and `status` read it: provenance.json (a session per
    CPU; None: back-filled), run.yaml (`cpu_numerics` only when given, as runs write it),
    and sealed (finished) or a checkpoint (partial)."""
    run_dir.mkdir(parents=True)
    sessions = [_session(c) for c in cpus] if cpus is not None else []
    provenance = {"results_version": version, "sessions": sessions}
    if cpus is None:
        provenance["backfilled"] = True
    (run_dir / "provenance.json").write_text(json.dumps(provenance))
    config = {"method": "original_only"} | ({"cpu_numerics": numerics} if numerics else {})
    (run_dir / "run.yaml").write_text(yaml.safe_dump(config))
    if finished:
        (run_dir / "final_metrics.json").write_text(json.dumps({"score": 5.0}))
        seal_run(run_dir)
    else:
        (run_dir / LATEST_CHECKPOINT).parent.mkdir()
        (run_dir / LATEST_CHECKPOINT).write_bytes(b"")


@pytest.fixture(scope="module")
def plan():
    return load_campaign(CPU.request(REPO / "params.yaml", Path("unused")))[0]


@pytest.fixture
def store(tmp_path, plan) -> Path:
    """Row PPO: seeds 0 and 1 done on AMD (seed 0 committed); row schedule: seed 0 done on
    Intel, portable, seed 1 partial, begun on AMD and resumed on Intel; row fixed:
    nothing; row random: seed 0 done, back-filled (machine unknown)."""
    versions = results_versions()
    root = tmp_path / "runs"
    jobs = {row.name: list(row.jobs) for row in plan.rows}

    def at(row: str, seed: int) -> tuple[Path, int]:
        job = jobs[row][seed]
        return job_dir(job, root), versions[job_version_key(job)]

    fake_run(*at(PPO, 0), [AMD])
    fake_run(*at(PPO, 1), [AMD])
    fake_run(*at(SCHEDULE, 0), [INTEL], numerics="portable")
    fake_run(*at(SCHEDULE, 1), [AMD, INTEL], finished=False)
    fake_run(*at(RANDOM, 0), None)
    return root


def test_each_row_says_what_it_reuses_and_a_mix_is_warned(plan, store):
    reuse = row_reuse(plan, store, results_versions(), lambda d: d.name == "seed-0")
    amd, intel = "AMD EPYC (AVX512)", "Intel Xeon Platinum 8481C (AVX512)"
    assert reuse_lines(reuse) == [
        "reused runs per row (kept as they are; partial ones resume):",
        f"  {PPO}: 2 of 5 done (1 committed); CPU {amd} x2; native x2",
        f"  {SCHEDULE}: 1 of 5 done (1 committed), 1 partial; CPU {intel} x2, {amd} x1; "
        "portable x1, native x1",
        f"  {FIXED}: 0 of 5 done (0 committed)",
        f"  {RANDOM}: 1 of 5 done (1 committed); CPU unknown x1; native x1",
        f"warning: the reused runs mix CPU classes: {amd} x3 ({PPO}, {SCHEDULE}), "
        f"{intel} x2 ({SCHEDULE}); a native run repeats bit for bit only on its own class",
        f"warning: the reused runs mix CPU numerics: native x4 ({PPO}, {SCHEDULE}, {RANDOM}), "
        f"portable x1 ({SCHEDULE}); a portable and a native run round differently",
    ]


def test_one_class_and_one_mode_give_no_warning_and_unknown_is_no_class():
    assert cpu_classes(None) == ["unknown"]
    assert cpu_classes({"sessions": [_session(AMD)], "backfilled": True}) == ["unknown"]
    assert cpu_classes({"sessions": [_session(AMD), _session(AMD)]}) == ["AMD EPYC (AVX512)"]
    from envgen.campaign.machines import RowReuse

    one = RowReuse(5, 2, 2, 0)
    one.classes.update(["AMD EPYC (AVX512)", "AMD EPYC (AVX512)"])
    one.numerics.update(["native", "native"])
    other = RowReuse(5, 1, 0, 0)
    other.classes.update(["unknown"])
    other.numerics.update(["native"])
    lines = reuse_lines({"a": one, "b": other})
    assert not [line for line in lines if line.startswith("warning")], lines


def test_status_and_start_print_the_rows_reuse(plan, store, tmp_path, monkeypatch, capsys):
    result = envgen_subprocess("campaign", "status", "cpu", "--runs-root", str(store), cwd=REPO)
    assert result.returncode == 0, result.stderr
    out = result.stdout.splitlines()
    assert f"  {PPO}: 2 of 5 done (0 committed); CPU AMD EPYC (AVX512) x2; native x2" in out
    assert sum(line.startswith("warning: the reused runs mix CPU") for line in out) == 2

    # start: the same lines after its own, with nothing launched and no real lock taken
    monkeypatch.chdir(REPO)
    lock = tmp_path / "lock"
    monkeypatch.setattr(process, "acquire", lambda c: os.open(lock, os.O_RDWR | os.O_CREAT))
    monkeypatch.setattr(process, "launch", lambda c, command, fd, workers: 4242)
    assert campaign_run.start(CPU, REPO / "params.yaml", store, 1, True) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("campaign cpu: started pid 4242, 16 of 20 runs to train")
    assert "each committed as it finishes" in out[0]
    assert out[1] == "reused runs per row (kept as they are; partial ones resume):"
    assert out[2].startswith(f"  {PPO}: 2 of 5 done (0 committed)")
    assert out[-1].startswith("warning: the reused runs mix CPU numerics")


def test_start_help_says_it_commits_to_git_and_how_not_to():
    result = envgen_subprocess("campaign", "start", "--help", timeout=120)
    assert result.returncode == 0
    text = " ".join(result.stdout.split())
    assert "Each finished run is committed to git as it finishes" in text
    assert "--no-commit: commit nothing" in text
    assert "on which CPU classes" in text
