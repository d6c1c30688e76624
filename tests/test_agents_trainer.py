"""Trainer at tiny scale on the real CrafterVecEnv: phases, determinism, kill-and-resume."""

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from envgen.agents.config import PPOConfig, model_preset
from envgen.agents.evaluate import evaluate_policy, training_window
from envgen.agents.runlog import read_jsonl
from envgen.agents.trainer import Trainer, crafter_vec_env_factory
from envgen.envs.crafter.config import CrafterConfig
from envgen.errors import ConfigError
from envgen.scoring import ACHIEVEMENTS

# 4 envs x 16 steps = 64 steps per rollout; checkpoint every 2 rollouts.
PPO = PPOConfig(num_envs=4, num_steps=16, minibatches=2, checkpoint_every=128)
# Short episodes so that a few hundred steps finish many of them.
PHASE_1 = [CrafterConfig(length=20), CrafterConfig(target_biome="mountain", length=12)]
PHASE_2 = [CrafterConfig(length=20, inventory=(("wood", 5),))]


def _trainer(run_dir: Path, seed: int = 7, checkpoint_seconds: float = 0.0) -> Trainer:
    return Trainer(
        model_preset("nature"),
        PPO,
        seed,
        run_dir,
        env_factory=crafter_vec_env_factory(1),
        checkpoint_seconds=checkpoint_seconds,
    )


def _schedule(trainer: Trainer, stop: int | None = None) -> None:
    """Two phases (mixture switch mid-segment at 192), optionally stopping early at `stop`."""
    trainer.train_until(192 if stop is None else min(192, stop), PHASE_1, phase="llm")
    trainer.train_until(384 if stop is None else stop, PHASE_2, phase="crafter")


def _outcome(run_dir: Path, trainer: Trainer) -> tuple:
    metrics = [
        {k: v for k, v in m.items() if not k.startswith("time/")}
        for m in read_jsonl(run_dir / "metrics.jsonl")
    ]
    params = {k: v.clone() for k, v in trainer.model.state_dict().items()}
    return (run_dir / "episodes.jsonl").read_text(), metrics, params, trainer.global_step


def _killed_then_resumed(run_dir: Path, stop: int, checkpoint_seconds: float = 0.0):
    """The schedule stopped at `stop` without saving, as if killed, then resumed and
    finished: (checkpoints written before the kill, step resumed from, outcome)."""
    killed = _trainer(run_dir, checkpoint_seconds=checkpoint_seconds)
    _schedule(killed, stop=stop)
    assert killed.global_step == stop
    written = killed.counters.checkpoints
    killed.close()
    resumed = _trainer(run_dir)
    assert resumed.resume()
    step = resumed.global_step
    _schedule(resumed)
    got = _outcome(run_dir, resumed)
    resumed.close()
    return written, step, got


def test_killed_and_resumed_run_ends_identical(tmp_path):
    # Uninterrupted run.
    full = _trainer(tmp_path / "full")
    _schedule(full)
    expected = _outcome(tmp_path / "full", full)
    full.close()

    # Same seed, stopped one rollout after its 2nd checkpoint (step 256) without saving,
    # as if killed; its logs hold a rollout the resumed run must redo.
    written, step, got = _killed_then_resumed(tmp_path / "resumed", stop=320)
    assert written == 2 and step == 256
    assert got[3] == expected[3] == 384
    assert got[0] == expected[0]  # every episode line, bit for bit
    assert got[1] == expected[1]  # losses of every rollout
    assert all(torch.equal(got[2][k], expected[2][k]) for k in expected[2])

    # Wall-clock checkpoints (`envgen gpu run`'s chunks), here after every rollout: the
    # kill at 320 loses nothing, and the numbers are the uninterrupted run's.
    written, step, got = _killed_then_resumed(tmp_path / "clocked", 320, checkpoint_seconds=1e-9)
    assert written == 5 and step == 320
    assert got[:2] == expected[:2] and got[3] == expected[3]
    assert all(torch.equal(got[2][k], expected[2][k]) for k in expected[2])

    episodes = read_jsonl(tmp_path / "full" / "episodes.jsonl")
    assert {ep["phase"] for ep in episodes} == {"llm", "crafter"}
    assert {ep["config_index"] for ep in episodes if ep["phase"] == "llm"} == {0, 1}
    assert all(ep["step"] <= 192 for ep in episodes if ep["phase"] == "llm")
    assert set(episodes[0]) >= {"length", "reward", *(f"achievement_{a}" for a in ACHIEVEMENTS)}
    window = training_window(episodes, 100, phase="llm")
    end = max(ep["step"] for ep in episodes if ep["phase"] == "llm")
    in_window = [ep for ep in episodes if ep["phase"] == "llm" and ep["step"] > end - 100]
    assert 0 < window["episodes"] == len(in_window) < sum(ep["phase"] == "llm" for ep in episodes)


def test_checkpoints_end_no_episode_and_switches_are_counted(tmp_path):
    """The same schedule with a checkpoint after every rollout or never: identical logs.
    Only the mixture switch at step 192 ends running episodes, and they are counted."""
    runs = {}
    for name, every in (("often", 64), ("never", 1 << 30)):
        ppo = PPOConfig(num_envs=4, num_steps=16, minibatches=2, checkpoint_every=every)
        trainer = Trainer(
            model_preset("nature"), ppo, 7, tmp_path / name, env_factory=crafter_vec_env_factory(1)
        )
        _schedule(trainer)
        runs[name] = _outcome(tmp_path / name, trainer), trainer.counters
        trainer.close()
    (often, often_counters), (never, never_counters) = runs["often"], runs["never"]
    assert often_counters.checkpoints == 6 and never_counters.checkpoints == 0
    assert often[0] == never[0] and often[1] == never[1]
    # at 192 the length-12 envs have just reset (48 = 4 x 12), the length-20 ones run on
    assert often_counters.episodes_cut == never_counters.episodes_cut == 2
    cut_lines = [m for m in often[1] if "episodes_cut" in m]
    assert [(m["step"], m["episodes_cut"]) for m in cut_lines] == [(256, 2)]


def test_run_killed_before_its_first_checkpoint_resumes_without_double_counting(tmp_path):
    full = _trainer(tmp_path / "full")
    full.train_until(64, PHASE_1, phase="llm")
    expected = _outcome(tmp_path / "full", full)
    full.close()

    killed = _trainer(tmp_path / "resumed")
    killed.train_until(64, PHASE_1, phase="llm")  # logs written, no checkpoint (at 128)
    assert killed.counters.checkpoints == 0 and read_jsonl(tmp_path / "resumed/episodes.jsonl")
    killed.close()
    resumed = _trainer(tmp_path / "resumed")
    assert not resumed.resume() and resumed.global_step == 0
    resumed.train_until(64, PHASE_1, phase="llm")
    got = _outcome(tmp_path / "resumed", resumed)
    resumed.close()
    assert got[0] == expected[0] and got[1] == expected[1]  # each episode and rollout once


def test_other_seed_differs_and_resume_checks_settings(tmp_path):
    a, b = _trainer(tmp_path / "a", seed=1), _trainer(tmp_path / "b", seed=2)
    for t in (a, b):
        t.train_until(64, PHASE_1)
        t.checkpoint()
        t.close()
    episodes = [read_jsonl(tmp_path / name / "episodes.jsonl") for name in "ab"]
    assert episodes[0] and episodes[0] != episodes[1]
    with pytest.raises(ConfigError, match="seed: checkpoint .* was written with 1"):
        _trainer(tmp_path / "a", seed=3).resume()
    with pytest.raises(ConfigError, match="configs"):
        _trainer(tmp_path / "c").train(64, [])


def test_evaluate_policy_reports_mean_and_std_over_seeds(tmp_path):
    model = _trainer(tmp_path).model
    out = evaluate_policy(
        model, seed=5, num_seeds=3, config=CrafterConfig(length=20), env_factory=None
    )
    assert len(out["episodes"]) == 3 and all(ep["length"] == 20 for ep in out["episodes"])
    assert list(out["success_mean"]) == list(ACHIEVEMENTS) == list(out["success_std"])
    assert 0.0 <= out["score_mean"] <= 100.0 and out["score_std"] >= 0.0
    json.dumps(out)  # serialisable, ready for the LLM prompt
    assert list(out["feedback"]) == list(ACHIEVEMENTS)
    assert all(isinstance(x, int) for pair in out["feedback"].values() for x in pair)


def test_feedback_is_the_authors_rounded_statistic():
    """update_environments.py: round each run's rate, mean and std (ddof 0), round again."""
    from envgen.agents.evaluate import feedback_statistic

    rates = np.array([[12.5, 100.0, 33.4], [13.5, 0.0, 33.6], [50.0, 50.0, 0.0]])
    # rounded runs: [12, 100, 33], [14, 0, 34], [50, 50, 0] (12.5 -> 12: halves to even)
    mean, std = feedback_statistic(rates)
    assert mean == [25, 50, 22]  # 25.33, 50, 22.33
    assert std == [17, 41, 16]  # 17.46, 40.82, 15.80
    assert feedback_statistic(np.array([[2.0], [3.0]])) == ([2], [0])  # 2.5 and 0.5 to even
