"""SFL's rollout: the current policy played, without updates, on each candidate world, to
measure each world's per-achievement success rates (`envgen.loop.learnability` scores
them; docs/loop.md, "SFL")."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from envgen.agents.networks import ActorCritic
from envgen.agents.ppo import policy_step
from envgen.agents.trainer import EnvFactory
from envgen.loop.learnability import RolloutOutcome
from envgen.scoring import ACHIEVEMENTS


def rollout_success(
    model: ActorCritic,
    configs: Sequence[Any],
    envs_per_config: int,
    steps: int,
    seed: int,
    action_seed: int,
    env_factory: EnvFactory,
    device: str | torch.device = "cpu",
) -> RolloutOutcome:
    """Play `steps` steps in each of `envs_per_config` envs per config, without updates.

    One vector env of M x E envs (E contiguous envs per config, seeded by `seed`, actions
    from `action_seed`), auto-reset in the same config, as SFL's fixed-length rollouts on
    each level: the cost is exactly M x E x `steps` env steps. Success shares are over the
    episodes that finished; each env's last, unfinished episode is dropped (SFL does the
    same), so an env finishes at least one episode when `steps` >= the world's length.
    """
    m = len(configs)
    env = env_factory(list(configs), m * envs_per_config, seed, None)
    unlocked: list[list[np.ndarray]] = [[] for _ in range(m)]
    generator = torch.Generator(device=device)
    generator.manual_seed(action_seed)
    was_training = model.training
    model.eval()
    try:
        obs = env.reset()
        for _ in range(steps):
            actions = policy_step(model, torch.from_numpy(obs).to(device), generator)[0]
            obs, _, terminated, truncated, infos = env.step(actions.cpu().numpy())
            for i in np.flatnonzero(np.logical_or(terminated, truncated)):
                episode = infos[i]["episode"]
                counts = episode["achievements"]
                row = np.array([counts.get(name, 0) > 0 for name in ACHIEVEMENTS])
                unlocked[int(episode["config_index"])].append(row)
    finally:
        env.close()
        model.train(was_training)
    rates = tuple(
        tuple(np.mean(u, axis=0).tolist()) if u else (0.0,) * len(ACHIEVEMENTS) for u in unlocked
    )
    return RolloutOutcome(rates, tuple(len(u) for u in unlocked), m * envs_per_config * steps)
