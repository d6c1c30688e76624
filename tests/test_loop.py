"""Tiny real runs of the EnvGen loop (replayed LLM, small network); its baselines are in
tests/test_loop_baselines.py.

The EnvGen run replays `tests/data/loop_cache/`: the bundled local model's replies to
this tiny run's four calls (the adaptation prompts hold the agent's evaluation, so
they were recorded by running this exact config once with `--llm-mode fill`; see
`record_command` below), filed under their protocol slots. Replay is by slot, so the
run completes on any machine, whatever its float results; no test here compares its
numbers with numbers recorded elsewhere, only with runs made in the same test session.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from envgen.agents.threads import DEFAULT_TORCH_THREADS, set_torch_threads
from envgen.errors import CacheMissError, EnvGenError
from envgen.llm.cache import CachedLLM
from envgen.llm.client import backend_config
from envgen.llm.conversation import EnvironmentDesigner, PromptOptions
from envgen.llm.slots import run_id
from envgen.loop.config import RunConfig
from envgen.loop.runner import CallLog, RunOptions, execute_run
from envgen.scoring import ACHIEVEMENTS as SKILLS
from envgen.store.run_dir import RunDir

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[1]
LOOP_CACHE = REPO / "tests" / "data" / "loop_cache"
PIPELINE_CACHE = REPO / "data" / "llm_cache"
TINY_PPO = {"num_envs": 4, "num_steps": 64, "minibatches": 4, "checkpoint_every": 512}
TINY = RunConfig(
    n_cycles=4,
    llm_env_steps=512,
    orig_env_steps=512,
    final_steps=4096,  # 1024 per env: near-random agents die well before, on any trajectory
    eval_episodes=2,
    model="nature",
    ppo=tuple(sorted(TINY_PPO.items())),
)
VOLATILE = {"wall_s"}  # the only final metric allowed to differ between equal runs


def record_command(config_path: Path) -> str:
    return (
        f"envgen run {config_path} --seed 0 --llm-mode fill --backend local "
        f"--cache-dir tests/data/loop_cache --runs-root /tmp/loop-record"
    )


def replay_llm(cache_dir: Path = LOOP_CACHE) -> CachedLLM:
    return CachedLLM("replay", cache_dir, backend_config("local"))


def stable(metrics: dict) -> dict:
    return {k: v for k, v in metrics.items() if k not in VOLATILE}


@pytest.fixture(scope="module")
def envgen_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("runs")
    try:
        return execute_run(TINY, 0, root, replay_llm())
    except CacheMissError as exc:
        config_path = root / "tiny.yaml"
        config_path.write_text(json.dumps(TINY.to_dict()))
        pytest.fail(
            f"{exc}\nThe tiny run no longer reproduces the recorded one. If training "
            f"changed on purpose, re-record with:\n  {record_command(config_path)}"
        )


def test_envgen_run_artifacts(envgen_run: Path):
    calls = json.loads((envgen_run / "llm_calls.json").read_text())
    assert [c["label"] for c in calls] == [
        "crafter/initial/n4/set0",
        "crafter/adapt2/n4/set0",
        "crafter/adapt3/n4/set0",
        "crafter/adapt4/n4/set0",
    ]
    assert all(c["cached"] for c in calls)
    cycles = sorted((envgen_run / "cycles").iterdir())
    assert len(cycles) == 4
    for i, cycle in enumerate(cycles, start=1):
        envs = json.loads((cycle / "environments.json").read_text())["configs"]
        assert len(envs) == 4
        evaluation = json.loads((cycle / "evaluation.json").read_text())
        assert set(evaluation["success_mean"]) == set(evaluation["success_std"])
        assert (cycle / "feedback.txt").is_file() == (i > 1)
    feedback = (cycles[1] / "feedback.txt").read_text()
    assert "+/-" in feedback and "collect_wood" in feedback.replace(" ", "_").lower()
    metrics = json.loads((envgen_run / "final_metrics.json").read_text())
    assert metrics["llm_calls"] == 4
    assert metrics["global_steps"] >= TINY.total_steps
    accounting = json.loads((envgen_run / "llm_accounting.json").read_text())
    assert accounting["calls"] == 4 and accounting["cost_usd"] == 0.0


@pytest.fixture(scope="module")
def other_machine_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny run as another machine makes it: two torch threads change the float sums
    (as another CPU's vector units or a GPU would), hence the feedback numbers."""
    torch.set_num_threads(2)
    try:
        return execute_run(TINY, 0, tmp_path_factory.mktemp("other"), replay_llm())
    finally:
        set_torch_threads(DEFAULT_TORCH_THREADS)


def test_slot_replay_serves_every_call_on_another_machine(other_machine_run: Path):
    calls = json.loads((other_machine_run / "llm_calls.json").read_text())
    assert all(c["served"] in ("exact", "slot") for c in calls)
    assert any(c["served"] == "slot" and c["drift"]["differing"] > 0 for c in calls), (
        "two torch threads left every feedback number as recorded: this test no longer "
        "simulates another machine"
    )
    replay = json.loads((other_machine_run / "final_metrics.json").read_text())["llm_replay"]
    assert replay["calls"] == 4 and replay["live"] == 0 and replay["slot"] >= 1
    assert replay["max_drift"] > 0 and replay["feedback_calls"] == 3


def test_strict_replay_misses_what_slot_replay_served(other_machine_run: Path):
    """The other machine's requests, rebuilt from its evaluations, sent in strict mode."""
    calls = json.loads((other_machine_run / "llm_calls.json").read_text())
    first_slot = next(c["label"] for c in calls if c["served"] == "slot")
    strict = CachedLLM("replay", LOOP_CACHE, backend_config("local"), match="strict")
    designer = EnvironmentDesigner(
        PromptOptions(structured="json_object"), CallLog(strict, run_id(TINY.config_hash(), 0))
    )
    designer.generate(TINY.envs_per_call)
    with pytest.raises(CacheMissError) as err:
        for cycle in range(1, TINY.n_cycles):
            path = other_machine_run / "cycles" / f"cycle-{cycle:02d}" / "evaluation.json"
            evaluation = json.loads(path.read_text())
            designer.adapt(
                {s: (evaluation["success_mean"][s], evaluation["success_std"][s]) for s in SKILLS}
            )
    message = str(err.value)
    assert first_slot in message and "strict replay" in message
    assert "LLM mode 'fill'" in message and "--backend local" in message


def test_finished_run_is_not_redone(envgen_run: Path):
    before = (envgen_run / "final_metrics.json").stat().st_mtime_ns
    again = execute_run(TINY, 0, envgen_run.parent.parent, replay_llm())
    assert again == envgen_run
    assert (envgen_run / "final_metrics.json").stat().st_mtime_ns == before


def test_killed_run_resumes_to_the_same_result(envgen_run: Path, tmp_path: Path):
    config_path = tmp_path / "tiny.yaml"
    config_path.write_text(json.dumps(TINY.to_dict()))
    root = tmp_path / "runs"
    command = [
        sys.executable,
        "-m",
        "envgen.cli",
        "run",
        str(config_path),
        "--seed",
        "0",
        "--runs-root",
        str(root),
        "--cache-dir",
        str(LOOP_CACHE),
    ]
    paths = RunDir.of(root, TINY.config_hash(), 0)
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 300
    while not paths.cycle(2).evaluation.is_file():
        assert proc.poll() is None, "the run ended before it could be killed"
        assert time.monotonic() < deadline, "the run made no progress"
        time.sleep(0.2)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    assert not paths.finished
    done = subprocess.run([*command, "--resume"], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    resumed = json.loads(paths.final_metrics.read_text())
    uninterrupted = json.loads((envgen_run / "final_metrics.json").read_text())
    assert stable(resumed) == stable(uninterrupted)


def test_cache_miss_stops_before_anything_is_written(tmp_path: Path):
    empty = tmp_path / "empty_cache"
    empty.mkdir()
    with pytest.raises(CacheMissError, match="crafter/initial/n4/set0"):
        execute_run(TINY, 0, tmp_path / "runs", replay_llm(empty))
    assert not (tmp_path / "runs").exists()


def test_partial_run_needs_resume(tmp_path: Path):
    paths = RunDir.of(tmp_path, TINY.config_hash(), 0)
    paths.root.mkdir(parents=True)
    with pytest.raises(EnvGenError, match="--resume"):
        execute_run(TINY, 0, tmp_path, replay_llm(), RunOptions(resume=False))
