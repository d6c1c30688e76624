"""A Crafter run needs neither procgen (Heist's engine) nor openai, dotenv or httpx (the
LLM client and server): a GPU machine with only torch and Crafter's wheels trains
Crafter-only rows (docs/pipeline.md, "GPU driver", lists the wheels).

Each check runs in a subprocess whose `sitecustomize` makes importing those packages fail,
as on a machine without them; spawned workers inherit it through PYTHONPATH.
"""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

from envgen.results_version import RESULTS_VERSION
from envgen.store.provenance import recorded_version
from tests.import_blocker import blocker_env

BLOCKED = ("procgen", "openai", "dotenv", "httpx")
REPO = Path(__file__).resolve().parents[1]
CRAFTER_ONLY_SEED_0 = "ca3d42bc0a83/seed-0"


def _run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    env = blocker_env(tmp_path, blocked=BLOCKED)
    return subprocess.run(
        [sys.executable, *args], cwd=tmp_path, env=env, capture_output=True, text=True
    )


def test_the_blocker_blocks(tmp_path):
    result = _run(tmp_path, "-c", "import procgen")
    assert result.returncode != 0 and "No module named 'procgen'" in result.stderr


def test_a_crafter_run_needs_no_procgen_openai_or_dotenv(tmp_path):
    config = tmp_path / "row.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "method": "original_only",
                "original_only_steps": 256,
                "final_steps": 256,
                "eval_episodes": 1,
                "ppo": {"num_envs": 2, "num_steps": 64, "minibatches": 2},
            }
        )
    )
    result = _run(
        tmp_path,
        "-m",
        "envgen.cli",
        "run",
        str(config),
        "--seed",
        "0",
        "--runs-root",
        str(tmp_path / "runs"),
    )
    assert result.returncode == 0, result.stdout + result.stderr
    (final,) = (tmp_path / "runs").glob("*/seed-0/final_metrics.json")
    assert json.loads(final.read_text())["global_steps"] == 256
    loaded = _run(
        tmp_path,
        "-c",
        "import sys, envgen.pipeline.train, envgen.pipeline.jobs; "
        f"print(sorted(m for m in sys.modules if m.split('.')[0] in {BLOCKED!r}))",
    )
    assert loaded.returncode == 0 and loaded.stdout.strip() == "[]", loaded.stderr


def test_committing_a_run_loads_no_torch(tmp_path):
    """envgen.campaign.gitcommit and envgen.store.run_diff name the checkpoint path
    through envgen.store.manifest, which must stay free of torch, as they are."""
    env = blocker_env(tmp_path, blocked=("torch",))
    code = "import envgen.campaign.gitcommit, envgen.store.run_diff"
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr


def test_campaign_status_reads_finished_runs_without_torch(tmp_path):
    """Planning, the run store's states and the results tables load no torch (seconds
    per call); only a partial run's checkpoint (its step) is read with it."""
    env = blocker_env(tmp_path, blocked=("torch",))
    finished = tmp_path / "runs"
    seed_0 = Path(CRAFTER_ONLY_SEED_0)  # the CPU campaign's first run (results/campaign_cpu)
    shutil.copytree(REPO / "results" / "runs" / seed_0, finished / seed_0)
    result = subprocess.run(
        [sys.executable, "-m", "envgen.cli", "campaign", "status", "cpu"]
        + ["--runs-root", str(finished)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    rows = [line.split() for line in result.stdout.splitlines() if line.startswith("PPO")]
    # The committed run is current only while Crafter's results version is the one it was
    # trained under (docs/pipeline.md, "Results version"); after a bump it reads stale.
    if recorded_version(REPO / "results" / "runs" / seed_0) == RESULTS_VERSION["crafter"]:
        assert rows[0][-6:-1] == ["0", "done", "(not", "committed),", "score"]
    else:
        assert rows[0][-9:-6] == ["0", "stale", "(finished"]
    assert all(row[-1] == "missing" for row in rows[1:])


def test_a_command_loads_only_its_own_module(tmp_path):
    """`envgen verify` and `envgen campaign` must not pay for torch and scipy (seconds)
    because `envgen run` needs them: with both blocked, their parsers still build."""
    env = blocker_env(tmp_path, blocked=("torch", "scipy"))
    for argv in (["--help"], ["verify", "--help"], ["campaign", "status", "--help"]):
        result = subprocess.run(
            [sys.executable, "-m", "envgen.cli", *argv],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
        )
        assert result.returncode == 0, f"{argv}: {result.stderr}"
    result = subprocess.run(
        [sys.executable, "-m", "envgen.cli", "run", "--help"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 1  # the blocker works here; the missing package is one line:
    assert result.stderr.strip().splitlines() == [
        "envgen run: No module named 'torch'; install the project: make setup"
    ]
