"""A trained agent in Heist: the final test and the LLM's feedback (Crafter's:
`envgen.agents.evaluate`; `envgen.games` registers both). The test plays plain easy
Heist (`metrics.run_episodes`); the paper's Heist score is the success over its episodes
(docs/paper.md, "Agent and training protocol"; docs/heist.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from envgen.agents.evaluate import feedback_statistic, sampling_policy
from envgen.agents.runlog import heist_episode_record
from envgen.envs.heist import metrics
from envgen.envs.heist.config import HeistConfig

if TYPE_CHECKING:
    import torch

    from envgen.agents.networks import ActorCritic


def play_test_episodes(
    model: ActorCritic, seed: int, episodes: int, device: str | torch.device = "cpu"
) -> list[dict[str, Any]]:
    """`episodes` test episodes of the model in plain easy Heist (`metrics.run_episodes`,
    levels and action noise from `seed`), as log records; leaves the model in eval mode."""
    policy = sampling_policy(model, seed, device)
    infos = metrics.run_episodes(policy, seed=seed, episodes=episodes)
    return [heist_episode_record(info, 0, "test") for info in infos]


def evaluate(
    model: ActorCritic,
    seed: int,
    episodes: int,
    device: str,
    workers: int | None,
    original: HeistConfig,
    runs: int,
) -> dict[str, Any]:
    """`runs` test runs of `episodes` plain-Heist episodes; feedback as Crafter's.
    `workers` and `original` are the registry's common signature (`envgen.games.Evaluate`):
    Heist's test always plays the original game with its own thread count."""
    records = play_test_episodes(model, seed, episodes * runs, device)
    per_run = [
        [mean for mean, _ in metrics.skill_stats(records[r::runs]).values()] for r in range(runs)
    ]
    feedback = zip(*feedback_statistic(np.array(per_run)), strict=True)
    stats = metrics.skill_stats(records)
    return {
        "feedback": {skill: list(ms) for skill, ms in zip(stats, feedback, strict=True)},
        "success_mean": {skill: mean for skill, (mean, _) in stats.items()},
        "success_std": {skill: std for skill, (_, std) in stats.items()},
        "test": metrics.summary(records),
    }
