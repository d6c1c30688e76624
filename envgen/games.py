"""Explicit registry: game name -> what training, logging and scoring need of that game.

`RunConfig.game` names an entry; `execute_run` builds the network, the PPO settings,
the trainer's vec env and episode logs, and the evaluations from it. Crafter is
Tables 1-7 of the paper, Heist Table 8 (docs/paper.md, "Results").

Heist's PPO defaults are CleanRL's `ppo_procgen.py` (vwxyzjn/cleanrl), the common PPO
reference on procgen: gamma 0.999, GAE lambda 0.95, lr 5e-4, 64 envs x 256 steps, 8
minibatches, 3 epochs, clip 0.2, entropy 0.01, value 0.5, grad norm 0.5 (docs/heist.md,
"PPO for Heist", lists what differs from CleanRL's loop).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import torch

from envgen.agents.config import ModelConfig, PPOConfig, from_mapping, model_preset
from envgen.agents.evaluate import evaluate_policy, feedback_statistic, sampling_policy
from envgen.agents.networks import ActorCritic
from envgen.agents.runlog import episode_record, heist_episode_record
from envgen.agents.trainer import EnvFactory, EpisodeRecord, Summarize, crafter_vec_env_factory
from envgen.envs.crafter.config import CrafterConfig
from envgen.envs.heist import metrics as heist_metrics
from envgen.envs.heist.config import HeistConfig
from envgen.envs.heist.engine import NUM_ACTIONS as HEIST_ACTIONS
from envgen.envs.heist.env import HeistVecEnv
from envgen.errors import ConfigError
from envgen.llm.heist import skills as heist_skills
from envgen.scoring import summarize as crafter_summary

# (model, seed, episodes per run, device, workers, original config, runs) ->
# {"feedback": {skill: [mean %, std %]}, "success_mean": {skill: %}, ...}: the agent in
# the original game without updates; `feedback` is the authors' statistic over the runs.
Evaluate = Callable[[ActorCritic, int, int, str, int | None, Any, int], dict[str, Any]]

HEIST_THREADS = 4  # procgen threads of a Heist vec env when `workers` is None
HEIST_CHECKPOINT_EVERY = 1_048_576  # 64 rollouts of 64 x 256; see docs/heist.md


@dataclasses.dataclass(frozen=True)
class GameSpec:
    """Everything game-specific about training and scoring an agent."""

    name: str
    """Registry key (`RunConfig.game`)."""
    original: Any
    """Config of the original game: its training phases and its tests."""
    num_actions: int
    """Size of the policy head."""
    ppo_defaults: tuple[tuple[str, Any], ...]
    """`PPOConfig` fields set for this game before a run's own `ppo` overrides."""
    vec_env_factory: Callable[[int | None], EnvFactory]
    """(workers) -> the trainer's vec-env factory; workers never change results."""
    episode_record: EpisodeRecord
    """(episode info, global step, phase) -> the episodes.jsonl line."""
    summarize: Summarize
    """Logged episodes -> summary whose "score" is the game's table number (percent)."""
    evaluate: Evaluate
    """Per-skill success in the original game, for the adaptation prompt."""

    def ppo_config(self, overrides: Mapping[str, Any]) -> PPOConfig:
        """Table 9's `PPOConfig` with this game's defaults, then `overrides`, applied."""
        return from_mapping(PPOConfig, {**dict(self.ppo_defaults), **overrides}, "ppo")

    def model_config(
        self, preset: str, *, bf16_autocast: bool = False, channels_last: bool = False
    ) -> ModelConfig:
        """The named network preset with this game's action count and the GPU options."""
        return dataclasses.replace(
            model_preset(preset),
            num_actions=self.num_actions,
            bf16_autocast=bf16_autocast,
            channels_last=channels_last,
        )


# --- Crafter ------------------------------------------------------------------------------
def _crafter_evaluate(
    model: ActorCritic,
    seed: int,
    episodes: int,
    device: str,
    workers: int | None,
    original: CrafterConfig,
    runs: int,
) -> dict[str, Any]:
    result = evaluate_policy(
        model,
        seed,
        num_seeds=runs,
        episodes_per_seed=episodes,
        device=device,
        env_factory=crafter_vec_env_factory(workers),
        config=original,
    )
    result.pop("episodes")
    return result


# --- Heist --------------------------------------------------------------------------------
def heist_vec_env_factory(num_threads: int | None = None) -> EnvFactory:
    """`HeistVecEnv` stepped by `num_threads` procgen threads (None: HEIST_THREADS)."""

    def make(configs, num_envs, seed, weights):
        threads = HEIST_THREADS if num_threads is None else num_threads
        return HeistVecEnv(configs, num_envs, seed, weights=weights, num_threads=threads)

    return make


def heist_summary(episodes: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Success rate (= "score"), mean reward and sub-goal rates in percent.

    Sub-goal rates are None when no episode had a key (or door) to take.
    """
    m = heist_metrics.summarise(episodes)
    return {
        "score": m.success,
        "success_rate": m.success,
        "reward": m.reward,
        "keys_collected": None if np.isnan(m.keys_collected) else m.keys_collected,
        "doors_opened": None if np.isnan(m.doors_opened) else m.doors_opened,
        "length": m.length,
        "episodes": m.episodes,
    }


def heist_test(
    model: ActorCritic, seed: int, episodes: int, device: str | torch.device = "cpu"
) -> list[dict[str, Any]]:
    """`episodes` test episodes of the model in plain easy Heist, as log records.

    Plays `envgen.envs.heist.metrics.run_episodes` (each game a fixed share of the
    episodes), levels and action noise from `seed`. Leaves the model in eval mode.
    """
    policy = sampling_policy(model, seed, device)
    infos = heist_metrics.run_episodes(policy, seed=seed, episodes=episodes)
    return [heist_episode_record(info, 0, "test") for info in infos]


def heist_skill_stats(episodes: Sequence[Mapping[str, Any]]) -> dict[str, tuple[float, float]]:
    """{skill: (mean %, std %)} over test episodes, std with ddof 0.

    Per episode: the share of its floor keys picked up (collect_keys), of its doors
    opened (open_doors), and whether the gem was stolen (steal_gem); episodes without
    keys or doors do not count for that skill ((0, 0) when none had any).
    """
    per_episode = {
        "collect_keys": [
            100.0 * ep["keys_collected"] / ep["keys_total"] for ep in episodes if ep["keys_total"]
        ],
        "open_doors": [
            100.0 * ep["doors_opened"] / ep["doors_total"] for ep in episodes if ep["doors_total"]
        ],
        "steal_gem": [100.0 * ep["success"] for ep in episodes],
    }
    return {
        skill: (float(np.mean(v)), float(np.std(v))) if v else (0.0, 0.0)
        for skill, v in ((s, per_episode[s]) for s in heist_skills())
    }


def _heist_evaluate(
    model: ActorCritic,
    seed: int,
    episodes: int,
    device: str,
    workers: int | None,
    original: HeistConfig,
    runs: int,
) -> dict[str, Any]:
    """`runs` test runs of `episodes` plain-Heist episodes; feedback as Crafter's."""
    records = heist_test(model, seed, episodes * runs, device)
    per_run = [
        [mean for mean, _ in heist_skill_stats(records[r::runs]).values()] for r in range(runs)
    ]
    feedback = zip(*feedback_statistic(np.array(per_run)), strict=True)
    stats = heist_skill_stats(records)
    return {
        "feedback": {skill: list(ms) for skill, ms in zip(stats, feedback, strict=True)},
        "success_mean": {skill: mean for skill, (mean, _) in stats.items()},
        "success_std": {skill: std for skill, (_, std) in stats.items()},
        "test": heist_summary(records),
    }


HEIST_PPO = {
    "gamma": 0.999,
    "gae_lambda": 0.95,
    "num_envs": 64,
    "num_steps": 256,
    "epochs": 3,
    "minibatches": 8,
    "clip": 0.2,
    "ent_coef": 0.01,
    "vf_coef": 0.5,
    "lr": 5e-4,
    "max_grad_norm": 0.5,
    "checkpoint_every": HEIST_CHECKPOINT_EVERY,
}

GAMES: dict[str, GameSpec] = {
    "crafter": GameSpec(
        name="crafter",
        original=CrafterConfig(),
        num_actions=ModelConfig().num_actions,
        ppo_defaults=(),
        vec_env_factory=crafter_vec_env_factory,
        episode_record=episode_record,
        summarize=crafter_summary,
        evaluate=_crafter_evaluate,
    ),
    "heist": GameSpec(
        name="heist",
        original=HeistConfig(),
        num_actions=HEIST_ACTIONS,
        ppo_defaults=tuple(sorted(HEIST_PPO.items())),
        vec_env_factory=heist_vec_env_factory,
        episode_record=heist_episode_record,
        summarize=heist_summary,
        evaluate=_heist_evaluate,
    ),
}


def game_spec(name: str) -> GameSpec:
    """The registered game, or a ConfigError listing the known ones."""
    if name not in GAMES:
        raise ConfigError("game", f"unknown game {name!r}; known: {', '.join(GAMES)}")
    return GAMES[name]
