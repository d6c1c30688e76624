"""The rollout the curating designers (SFL, PLR) score levels by: the current policy
played, without updates, on each candidate world, to measure each world's per-achievement
success rates (`envgen.loop.learnability` scores them; docs/loop.md, "SFL") and, for PLR,
its positive value loss (`envgen.loop.level_buffer`; docs/loop.md, "PLR-robust")."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from envgen.agents.networks import ActorCritic
from envgen.agents.ppo import gae, policy_step
from envgen.agents.trainer import EnvFactory
from envgen.loop.learnability import RolloutOutcome
from envgen.loop.level_buffer import episode_time_averages
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
    gae_params: tuple[float, float] | None = None,
) -> RolloutOutcome:
    """Play `steps` steps in each of `envs_per_config` envs per config, without updates.

    One vector env of M x E envs (E contiguous per config, seeded by `seed`, actions from
    `action_seed`), auto-reset in the same config: exactly M x E x `steps` env steps.
    Success shares are over the finished episodes; each env's last, unfinished one is
    dropped, as in SFL. `gae_params` (gamma, lambda), PLR only: also each config's
    positive value loss (`value_loss_by_config`); the bootstrap value after the last step
    is left at 0, since it reaches only the dropped episodes.
    """
    m = len(configs)
    env = env_factory(list(configs), m * envs_per_config, seed, None)
    unlocked: list[list[np.ndarray]] = [[] for _ in range(m)]
    generator = torch.Generator(device=device)
    generator.manual_seed(action_seed)
    scored = gae_params is not None
    config_of = np.asarray(env.config_indices) if scored else None
    rewards, values, dones = [], [], []
    was_training = model.training
    model.eval()
    try:
        obs = env.reset()
        for _ in range(steps):
            actions, _, value = policy_step(model, torch.from_numpy(obs).to(device), generator)
            obs, reward, terminated, truncated, infos = env.step(actions.cpu().numpy())
            if scored:
                rewards.append(np.asarray(reward, np.float32))
                values.append(value.float().cpu().numpy())
                dones.append(np.logical_or(terminated, truncated))
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
    loss = None
    if scored:
        assert gae_params is not None and config_of is not None
        loss = value_loss_by_config(rewards, values, dones, config_of, m, *gae_params)
    return RolloutOutcome(rates, tuple(len(u) for u in unlocked), m * envs_per_config * steps, loss)


def value_loss_by_config(
    rewards: list[np.ndarray],
    values: list[np.ndarray],
    dones: list[np.ndarray],
    config_of: np.ndarray,
    m: int,
    gamma: float,
    lam: float,
) -> tuple[float | None, ...]:
    """Positive value loss of each of `m` configs: GAE over the (T, E) steps, then the
    mean over all finished episodes of the config's envs of each episode's time-averaged
    max(advantage, 0); None for a config with no finished episode."""
    done = torch.from_numpy(np.stack(dones).astype(np.float32))
    value = torch.from_numpy(np.stack(values + [np.zeros_like(values[0])]))
    advantages = gae(torch.from_numpy(np.stack(rewards)), value, done, gamma, lam)
    sums, counts = episode_time_averages(advantages.clamp(min=0).numpy(), done.numpy() > 0)
    out: list[float | None] = []
    for c in range(m):
        n = int(counts[config_of == c].sum())
        out.append(float(sums[config_of == c].sum() / n) if n else None)
    return tuple(out)
