"""Heist test metrics: success (gem stolen), reward and sub-goal rates, in percent.

The paper scores Heist as the mean success over 100 test episodes for each of 10 seeds
(docs/paper.md, "Agent and training protocol"; Table 8: success % and reward, mean and
std over seeds). Sub-goal rates are this project's: the percentage of the keys on the
floor at the start that were picked up, and of the doors opened, pooled over episodes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from envgen.envs.heist.config import HeistConfig
from envgen.envs.heist.env import HeistVecEnv

TEST_EPISODES = 100  # per seed, the paper's protocol
Policy = Callable[[np.ndarray], np.ndarray]  # obs uint8 (N, 64, 64, 3) -> actions int (N,)


def summary(episodes: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The run summary a Heist row reports, from episode infos (`HeistVecEnv`'s
    `infos[i]["episode"]`): success rate (= "score") and mean reward, sub-goal rates in
    percent (None when no episode had a key, or door, to take), mean length, episodes."""
    if not episodes:
        raise ValueError("episodes: need at least one finished episode")

    def pooled(done: str, total: str) -> float | None:
        available = sum(ep[total] for ep in episodes)
        return 100.0 * sum(ep[done] for ep in episodes) / available if available else None

    success = 100.0 * float(np.mean([ep["success"] for ep in episodes]))
    return {
        "score": success,
        "success_rate": success,
        "reward": float(np.mean([ep["return"] for ep in episodes])),
        "keys_collected": pooled("keys_collected", "keys_total"),
        "doors_opened": pooled("doors_opened", "doors_total"),
        "length": float(np.mean([ep["length"] for ep in episodes])),
        "episodes": len(episodes),
    }


def skill_stats(episodes: Sequence[Mapping[str, Any]]) -> dict[str, tuple[float, float]]:
    """{skill: (mean %, std %)} over test episodes, std with ddof 0, in the chain's order: per
    episode, the share of its floor keys picked up (collect_keys), of its doors opened (open_doors),
    and whether the gem was stolen (steal_gem); episodes without keys or doors do not count for that
    skill ((0, 0) when none had any). The LLM designer reads these for Heist (docs/heist.md)."""
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
        for skill, v in per_episode.items()
    }


def run_episodes(
    policy: Policy,
    *,
    seed: int,
    episodes: int = TEST_EPISODES,
    num_envs: int = 10,
    configs: Sequence[HeistConfig] = (HeistConfig(),),
) -> list[dict[str, Any]]:
    """Play `episodes` episodes with `policy`; each game plays a fixed share, in order,
    so that short (successful) episodes are not over-counted."""
    num_envs = min(num_envs, episodes)
    quota = np.full(num_envs, episodes // num_envs)
    quota[: episodes % num_envs] += 1
    env = HeistVecEnv(configs, num_envs, seed=seed, num_threads=min(num_envs, 4))
    finished: list[dict[str, Any]] = []
    try:
        obs = env.reset()
        while np.any(quota > 0):
            obs, _, _, _, infos = env.step(policy(obs))
            for i, info in enumerate(infos):
                if "episode" in info and quota[i] > 0:
                    quota[i] -= 1
                    finished.append(info["episode"])
    finally:
        env.close()
    return finished
