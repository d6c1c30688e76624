"""`envgen rerun`: a run retrained on the machine that made it repeats its logs, and a
difference is named with its record, step and both values.

The "committed" run is trained here first (a tiny domain-randomization run with cycle
files), so machine and software match; the difference case edits one logged loss in an
unsealed copy, which is what a different float would look like.
"""

from __future__ import annotations

import gzip
import json
import shutil
import sys
from pathlib import Path

import pytest
import yaml

from envgen.agents.runlog import read_jsonl, read_jsonl_written
from envgen.errors import EnvGenError
from envgen.evidence import rerun
from envgen.loop.config import RunConfig
from tests.envgen_cli import REPO, envgen_subprocess

CONFIG = REPO / "tests" / "data" / "guard" / "envgen_random_authors.yaml"
SEED = "3"


def train(config: Path, root: Path) -> Path:
    done = envgen_subprocess(
        "run", str(config), "--seed", SEED, "--runs-root", str(root), "--torch-threads", "1"
    )
    assert done.returncode == 0, done.stdout + done.stderr
    (run_dir,) = root.glob(f"*/seed-{SEED}")
    return run_dir


@pytest.fixture(scope="module")
def committed(tmp_path_factory) -> Path:
    return train(CONFIG, tmp_path_factory.mktemp("committed"))


def unseal(run_dir: Path) -> None:
    """A sealed run, in place, with plain logs and no manifest: its records can be edited."""
    for gz in run_dir.glob("*.jsonl.gz"):
        gz.with_suffix("").write_bytes(gzip.decompress(gz.read_bytes()))
        gz.unlink()
    (run_dir / "manifest.json").unlink()


def unsealed_copy(run_dir: Path, dest_root: Path) -> Path:
    """The run copied with plain logs and no manifest, so its records can be edited."""
    copy = dest_root / run_dir.parent.name / run_dir.name
    shutil.copytree(run_dir, copy)
    unseal(copy)
    return copy


@pytest.mark.slow
def test_a_run_retrained_to_its_end_here_is_identical(committed):
    updates = len(read_jsonl(committed / "metrics.jsonl"))
    episodes = len(read_jsonl(committed / "episodes.jsonl"))
    done = envgen_subprocess("rerun", str(committed), "--seconds", "600")
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert "(to the end)" in out
    assert f"metrics.jsonl: {updates} record(s) identical (committed {updates}, " in out
    assert f"episodes.jsonl: {episodes} record(s) identical" in out
    cycle_files = len(list(committed.glob("cycles/*/*")))
    assert cycle_files >= 1 and f"cycle files: {cycle_files} of {cycle_files} identical" in out
    assert "machine and software: as the committed run's" in out
    assert "identical over every record compared" in out


@pytest.mark.slow
def test_an_edited_loss_is_the_first_difference_named_with_both_values(committed, tmp_path):
    copy = unsealed_copy(committed, tmp_path / "runs")
    metrics = copy / "metrics.jsonl"
    records = [json.loads(line) for line in metrics.read_text().splitlines()]
    true_value = records[1]["losses/value"]
    records[1]["losses/value"] = true_value + 1e-7
    metrics.write_text("".join(json.dumps(r) + "\n" for r in records))
    done = envgen_subprocess("rerun", str(copy), "--seconds", "600")
    assert done.returncode == 1, done.stdout + done.stderr
    assert (
        f"metrics.jsonl: first difference at record 2 (step {records[1]['step']:,}) of "
        f"{len(records)} compared: losses/value {true_value + 1e-7!r} committed, "
        f"{true_value!r} here\n"
    ) in done.stdout
    assert "whole run: metrics.jsonl record 2: losses/value differ" in done.stdout
    assert "package versions as recorded, so this is a reproducibility failure" in done.stdout


@pytest.mark.slow
def test_a_stopped_rerun_compares_what_both_wrote(tmp_path):
    long = yaml.safe_load(CONFIG.read_text())
    long["final_steps"] = 10_000_000  # never reached: both runs are stopped
    config = tmp_path / "long.yaml"
    config.write_text(yaml.safe_dump(long))
    runs = tmp_path / "runs"
    run_dir = runs / RunConfig.from_dict(long).config_hash() / f"seed-{SEED}"
    command = [sys.executable, "-m", "envgen.cli", "run", str(config), "--seed", SEED]
    command += ["--runs-root", str(runs), "--torch-threads", "1"]
    finished, _, code = rerun.retrain(command, run_dir, 300, 4, tmp_path / "log")
    assert (finished, code) == (False, None), (tmp_path / "log").read_text()
    written = len(read_jsonl_written(run_dir / "metrics.jsonl"))
    assert written >= 4  # the "committed" run: the start of a long one, killed

    done = envgen_subprocess("rerun", str(run_dir), "--updates", "2", "--seconds", "300")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "(stopped)" in done.stdout
    line = next(x for x in done.stdout.splitlines() if x.startswith("metrics.jsonl: "))
    compared = int(line.split()[1])
    assert 2 <= compared <= written
    assert (
        line
        == f"metrics.jsonl: {compared} record(s) identical (committed {written}, "
        + (line.split(", ", 1)[1])
    )


@pytest.mark.slow
def test_bad_run_dirs_are_one_line(tmp_path, committed):
    done = envgen_subprocess("rerun", str(tmp_path))
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        f"envgen rerun: RUN_DIR: {tmp_path} holds no run.yaml; give a run directory such as "
        "results/runs/<config-hash>/seed-<K>"
    ]
    copy = unsealed_copy(committed, tmp_path / "runs")
    run_yaml = copy / "run.yaml"
    run_yaml.write_text(run_yaml.read_text().replace("final_steps: 1024", "final_steps: 2048"))
    done = envgen_subprocess("rerun", str(copy))
    assert done.returncode == 1
    (line,) = done.stderr.strip().splitlines()
    assert "its config hashes to" in line and "not to its recorded" in line


def test_only_an_arithmetic_difference_explains_different_floats():
    from envgen.store.provenance import machine, software

    session = {"machine": machine("cpu"), "software": software()}
    assert rerun.setting_differences(session, "cpu") == ([], False)
    session["machine"] = {**session["machine"], "system": "Linux 0.1 x86_64", "cpus": 64}
    found, explains = rerun.setting_differences(session, "cpu")
    assert len(found) == 2 and not explains  # a kernel or core count changes no float
    isa = "AVX2" if session["machine"]["torch_cpu_capability"] != "AVX2" else "AVX512"
    session["machine"]["torch_cpu_capability"] = isa
    found, explains = rerun.setting_differences(session, "cpu")
    assert f"machine.torch_cpu_capability: {isa!r} committed" in found[-1] and explains
    assert rerun.setting_differences(None, "cpu")[1]


def test_the_retrained_run_uses_the_committed_runs_kernel_settings_unless_told(tmp_path):
    import argparse

    def command(recorded: bool, flag: bool | None) -> list[str]:
        run = rerun.Committed(tmp_path, {}, 3, "cpu", 1, None, None, recorded)
        args = argparse.Namespace(
            cache_dir=tmp_path, device=None, torch_threads=None, deterministic=flag
        )
        return rerun.rerun_command(run, tmp_path / "c.yaml", tmp_path / "runs", args)

    assert "--deterministic" in command(True, None)
    assert "--deterministic" not in command(False, None)
    assert "--deterministic" not in command(True, False)
    assert "--deterministic" in command(False, True)


def test_kernel_settings_explain_different_floats_only_on_a_gpu(monkeypatch):
    from envgen.store import provenance

    monkeypatch.setattr(provenance, "_gpu", lambda device: None if device == "cpu" else {"n": 1})
    kernels = provenance.kernel_settings()
    other = {**kernels, "tf32_cudnn": not kernels["tf32_cudnn"]}
    for device, explains in (("cpu", False), ("cuda:0", True)):
        session = {"machine": provenance.machine(device), "software": provenance.software()}
        session["kernels"] = kernels
        assert rerun.setting_differences(session, device, kernels) == ([], False)
        found, why = rerun.setting_differences(session, device, other)
        assert (len(found), why) == (1, explains) and found[0].startswith("kernels.tf32_cudnn: ")
    del session["kernels"]  # recorded before kernels were: unknown, so it may explain on a GPU
    assert rerun.setting_differences(session, "cuda:0", kernels) == (
        ["kernels: not recorded by both runs"],
        True,
    )
    session = {"machine": provenance.machine("cpu"), "software": provenance.software()}
    assert rerun.setting_differences(session, "cpu", kernels) == ([], False)


def test_a_session_field_of_the_wrong_shape_is_one_line(tmp_path, committed):
    copy = unsealed_copy(committed, tmp_path / "runs")
    path = copy / "provenance.json"
    original = path.read_text()
    for field, value, words in (
        ("kernels", ["on"], "kernels is list, not a mapping"),
        ("threads", {"torch_intra_op": "two"}, "torch_intra_op is 'two', not a whole number"),
    ):
        data = json.loads(original)
        data["sessions"][0][field] = value
        path.write_text(json.dumps(data))
        with pytest.raises(EnvGenError, match=words):
            rerun.committed_run(copy)


def test_a_committed_run_without_provenance_or_in_another_folder_is_one_line(tmp_path, committed):
    """Without provenance.json a rerun said it "repeats the committed run" (exit 0); on a
    linked folder it ignored --updates; a run in another run's folder is another run."""
    copy = tmp_path / "runs" / committed.parent.name / committed.name
    shutil.copytree(committed, copy)
    (copy / "provenance.json").unlink()
    with pytest.raises(EnvGenError, match="provenance.json: missing") as err:
        rerun.committed_run(copy)
    assert "\n" not in str(err.value)
    link = tmp_path / "linked" / committed.parent.name / committed.name
    link.parent.mkdir(parents=True)
    link.symlink_to(committed)
    with pytest.raises(EnvGenError, match="symbolic link"):
        rerun.committed_run(link)
    elsewhere = tmp_path / "moved" / "0123456789ab" / committed.name
    shutil.copytree(committed, elsewhere)
    with pytest.raises(EnvGenError, match="the folder holds another run"):
        rerun.committed_run(elsewhere)


def test_a_rerun_stopped_before_its_first_record_says_so(committed):
    done = envgen_subprocess("rerun", str(committed), "--seconds", "0.01")
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        "envgen rerun: the retrained run wrote no record to compare; give more --seconds"
    ], done.stderr


# --- envgen rerun --check: a few updates of many runs ---------------------------------------
CHECK_UPDATES = 8  # 8 x 64 steps: episodes finish within them


@pytest.mark.slow
def test_check_says_identical_then_names_the_perturbed_update_and_episode(committed, tmp_path):
    out = tmp_path / "check.json"
    args = ["--updates", str(CHECK_UPDATES), "--seconds", "300", "--json", str(out)]
    done = envgen_subprocess("rerun", "--check", str(committed), *args)
    assert done.returncode == 0, done.stdout + done.stderr
    (result,) = json.loads(out.read_text())["runs"]
    assert result["episodes"] >= 2  # episodes were compared, not only updates
    assert f"{committed}: bit-identical through update {CHECK_UPDATES} (" in done.stdout
    assert result["trained_on"] == result["checked_on"]
    assert f"trained on {result['trained_on']}, checked on {result['checked_on']}" in done.stdout

    copy = unsealed_copy(committed, tmp_path / "runs")
    metrics = copy / "metrics.jsonl"
    records = [json.loads(line) for line in metrics.read_text().splitlines()]
    true_value = records[4]["losses/value"]
    records[4]["losses/value"] = true_value + 1e-7
    metrics.write_text("".join(json.dumps(r) + "\n" for r in records))
    episodes = copy / "episodes.jsonl"
    lines = episodes.read_text().splitlines()
    second = json.loads(lines[1])
    second["reward"] += 1.0
    lines[1] = json.dumps(second)
    episodes.write_text("\n".join(lines) + "\n")
    done = envgen_subprocess("rerun", "--check", str(copy), *args)
    assert done.returncode == 1, done.stdout + done.stderr
    assert (
        f"{copy}: first differs at update 5, metric losses/value (committed "
        f"{true_value + 1e-7!r}, here {true_value!r}), episode 2; trained on "
    ) in done.stdout
    (result,) = json.loads(out.read_text())["runs"]
    assert (result["identical_through"], result["first_episode_differing"]) == (4, 2)


def test_check_samples_each_campaign_row_with_its_seed():
    from envgen.evidence import rerun_check

    rows = rerun_check.campaign_runs("campaign_cpu", REPO / "results")
    assert len(rows) == 4 and all(len(runs) == 5 for runs in rows.values())
    picked = rerun_check.sample_runs(rows, 2, seed=0)
    assert [row for row, _ in picked] == [row for row in rows for _ in range(2)]
    assert picked == rerun_check.sample_runs(rows, 2, seed=0)
    assert picked != rerun_check.sample_runs(rows, 2, seed=1)
