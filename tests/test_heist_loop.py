"""Tiny real Heist runs of the loop (Table 8's two rows, scaled down) and the game registry.

The EnvGen run replays the bundled local model's committed reply to
`heist/initial/n4/set0` from data/llm_cache/; training and the final test on plain
Heist are real (procgen, torch), at a few hundred steps.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from envgen.agents.config import PPOConfig
from envgen.agents.runlog import read_jsonl
from envgen.envs.heist.config import HeistConfig
from envgen.envs.heist.metrics import skill_stats as heist_skill_stats
from envgen.errors import ConfigError
from envgen.games import game_spec
from envgen.llm.cache import DEFAULT_CACHE_DIR, CachedLLM
from envgen.llm.client import backend_config
from envgen.loop.config import RunConfig
from envgen.loop.runner import execute_run

TINY_PPO = {"num_envs": 8, "num_steps": 32, "minibatches": 4, "checkpoint_every": 256}
COMMON = dict(game="heist", n_cycles=1, orig_env_steps=0, eval_episodes=4, model="nature")
PLAIN = RunConfig(
    method="original_only",
    llm_env_steps=0,
    final_steps=512,
    original_only_steps=512,
    ppo=tuple(sorted(TINY_PPO.items())),
    **COMMON,
)
ENVGEN = RunConfig(
    method="envgen",
    llm_env_steps=256,
    final_steps=256,
    ppo=tuple(sorted(TINY_PPO.items())),
    **COMMON,
)
FINAL_KEYS = {
    "score",
    "reward",
    "success_rate",
    "keys_collected",
    "doors_opened",
    "episodes",
    "global_steps",
    "llm_calls",
}
EPISODE_KEYS = {
    "return",
    "length",
    "success",
    "keys_collected",
    "keys_total",
    "doors_opened",
    "doors_total",
    "step",
    "phase",
    "config_index",
}


def replay() -> CachedLLM:
    return CachedLLM("replay", DEFAULT_CACHE_DIR, backend_config("local"))


def metrics(run_dir: Path) -> dict:
    out = json.loads((run_dir / "final_metrics.json").read_text())
    out.pop("wall_s")
    return out


def test_heist_envgen_run_trains_in_llm_levels_then_plain_heist(tmp_path: Path):
    run_dir = execute_run(ENVGEN, 0, tmp_path, replay())
    final = metrics(run_dir)
    assert FINAL_KEYS <= set(final)
    assert final["score"] == final["success_rate"]
    assert final["episodes"] == 4 and final["global_steps"] == 512 and final["llm_calls"] == 1
    calls = json.loads((run_dir / "llm_calls.json").read_text())
    assert [c["label"] for c in calls] == ["heist/initial/n4/set0"]
    envs = json.loads((run_dir / "cycles/cycle-01/environments.json").read_text())
    configs = [HeistConfig.from_dict(c) for c in envs["configs"]]
    assert len(configs) == 4 and any(not c.is_stock for c in configs)
    evaluation = json.loads((run_dir / "cycles/cycle-01/evaluation.json").read_text())
    assert set(evaluation["success_mean"]) == {"collect_keys", "open_doors", "steal_gem"}
    tests = read_jsonl(run_dir / "test_episodes.jsonl")
    assert len(tests) == 4 and all(set(t) == EPISODE_KEYS for t in tests)
    assert final["score"] == pytest.approx(100 * sum(t["success"] for t in tests) / 4)
    metric_lines = read_jsonl(run_dir / "metrics.jsonl")
    assert [m["phase"] for m in metric_lines] == ["llm1", "final"]


def test_heist_plain_run_is_deterministic(tmp_path: Path):
    first = metrics(execute_run(PLAIN, 3, tmp_path / "a"))
    second = metrics(execute_run(PLAIN, 3, tmp_path / "b"))
    assert first == second
    assert FINAL_KEYS <= set(first) and first["llm_calls"] == 0
    episodes = read_jsonl(tmp_path / "a" / PLAIN.config_hash() / "seed-3" / "episodes.jsonl")
    assert all(set(ep) == EPISODE_KEYS for ep in episodes)


def test_heist_ppo_defaults_are_cleanrl_procgen_and_overridable():
    heist = game_spec("heist")
    cfg = heist.ppo_config({})
    assert (cfg.gamma, cfg.gae_lambda, cfg.lr, cfg.num_envs, cfg.num_steps) == (
        0.999,
        0.95,
        5e-4,
        64,
        256,
    )
    assert (cfg.minibatches, cfg.epochs, cfg.clip, cfg.ent_coef, cfg.vf_coef) == (
        8,
        3,
        0.2,
        0.01,
        0.5,
    )
    assert cfg.max_grad_norm == 0.5
    small = heist.ppo_config({"num_envs": 8, "num_steps": 32})
    assert (small.num_envs, small.num_steps, small.gamma) == (8, 32, 0.999)
    assert heist.model_config("impala-small").num_actions == 15
    crafter = game_spec("crafter")
    assert crafter.ppo_config({}) == PPOConfig()
    assert crafter.model_config("paper").num_actions == 17
    with pytest.raises(ConfigError, match="ppo.gama: unknown key"):
        heist.ppo_config({"gama": 0.9})


def test_run_config_names_games_and_refuses_heist_curricula():
    with pytest.raises(ConfigError, match="game: 'procgen'"):
        RunConfig(game="procgen")
    with pytest.raises(ConfigError, match="method: 'easy_to_hard' .* crafter only"):
        RunConfig(game="heist", method="easy_to_hard")


def test_heist_skill_stats_by_hand():
    episodes = [
        {"keys_collected": 1, "keys_total": 2, "doors_opened": 0, "doors_total": 2, "success": 0},
        {"keys_collected": 2, "keys_total": 2, "doors_opened": 2, "doors_total": 2, "success": 1},
        {"keys_collected": 0, "keys_total": 0, "doors_opened": 0, "doors_total": 0, "success": 1},
    ]
    stats = heist_skill_stats(episodes)
    assert stats["collect_keys"] == pytest.approx((75.0, 25.0))
    assert stats["open_doors"] == pytest.approx((50.0, 50.0))
    assert stats["steal_gem"] == pytest.approx((200 / 3, (2 / 9) ** 0.5 * 100))
