"""PPO, readable top to bottom: rollout, GAE, update (CleanRL layout, AD semantics).

Follows the Achievement Distillation PPO that EnvGen trains (docs/paper.md, "Agent and
training protocol"; paper Table 9): GAE on denormalised values, advantages normalised
over the whole rollout, value targets normalised by an EWMA normaliser that is updated
on every minibatch before the loss (AD's `ScaledMSEHead.mse_loss`), unclipped value
loss, no reward normalisation. An episode end of either kind (death or time limit)
cuts the bootstrap, as in AD (the vec env auto-resets and keeps no final observation).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from envgen.agents.config import ModelConfig, PPOConfig
from envgen.agents.networks import OBS_SHAPE, ActorCritic


class VecEnv(Protocol):
    """What PPO needs of a vector env (`envgen.envs.vector.CrafterVecEnv` provides it)."""

    num_envs: int

    def reset(self) -> np.ndarray: ...

    def step(
        self, actions: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, list[dict[str, Any]]]: ...

    @property
    def last_obs(self) -> np.ndarray: ...

    def set_mixture(self, configs: Sequence[Any], weights: Sequence[float] | None = None): ...

    def close(self) -> None: ...


@dataclasses.dataclass
class Rollout:
    """One rollout's tensors, time-major: (num_steps, num_envs, ...)."""

    obs: torch.Tensor  # uint8 (T, N, 64, 64, 3)
    actions: torch.Tensor  # int64 (T, N)
    logprobs: torch.Tensor  # float32 (T, N)
    values: torch.Tensor  # float32 (T + 1, N), raw return units; row T bootstraps
    rewards: torch.Tensor  # float32 (T, N)
    dones: torch.Tensor  # float32 (T, N): 1 where the episode ended after step t

    @classmethod
    def empty(cls, cfg: PPOConfig, device: torch.device) -> Rollout:
        t, n = cfg.num_steps, cfg.num_envs
        return cls(
            obs=torch.zeros((t, n, *OBS_SHAPE), dtype=torch.uint8, device=device),
            actions=torch.zeros((t, n), dtype=torch.int64, device=device),
            logprobs=torch.zeros((t, n), device=device),
            values=torch.zeros((t + 1, n), device=device),
            rewards=torch.zeros((t, n), device=device),
            dones=torch.zeros((t, n), device=device),
        )

    def policy_inputs(self) -> tuple[torch.Tensor, ...]:
        """The model's inputs for every transition, flattened to (T * N, ...)."""
        return (self.obs.flatten(0, 1),)


@dataclasses.dataclass(frozen=True)
class FinishedEpisode:
    """An episode that ended during a rollout: at vec step `t` (0-based) in env `env`."""

    t: int
    env: int
    info: dict[str, Any]


def sample_actions(logprobs: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """Categorical sample via Gumbel-max, drawing noise only from `generator`."""
    u = torch.rand(logprobs.shape, generator=generator, device=logprobs.device)
    gumbel = -torch.log(-torch.log(u.clamp(1e-12, 1.0 - 1e-7)))
    return (logprobs + gumbel).argmax(dim=-1)


@torch.inference_mode()
def policy_step(
    model: ActorCritic, obs: torch.Tensor, generator: torch.Generator
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Actions, their log-probabilities and denormalised values for a batch of observations."""
    logprobs, value = model(obs)
    actions = sample_actions(logprobs, generator)
    return actions, logprobs.gather(1, actions[:, None])[:, 0], model.value_norm.denormalize(value)


# --- 1. Rollout: num_steps vec-env steps with the current policy ----------------------
def collect_rollout(
    model: ActorCritic,
    env: VecEnv,
    obs: np.ndarray,
    buf: Rollout,
    generator: torch.Generator,
) -> tuple[np.ndarray, list[FinishedEpisode]]:
    """Fill `buf` from `env` starting at `obs`; returns the next obs and finished episodes."""
    model.eval()
    device = buf.obs.device
    finished: list[FinishedEpisode] = []
    for t in range(buf.obs.shape[0]):
        obs_t = torch.from_numpy(obs).to(device)
        actions, logprobs, values = policy_step(model, obs_t, generator)
        obs, reward, terminated, truncated, infos = env.step(actions.cpu().numpy())
        buf.obs[t] = obs_t
        buf.actions[t] = actions
        buf.logprobs[t] = logprobs
        buf.values[t] = values
        buf.rewards[t] = torch.from_numpy(np.asarray(reward, np.float32)).to(device)
        done = np.logical_or(terminated, truncated)
        buf.dones[t] = torch.from_numpy(done.astype(np.float32)).to(device)
        finished += [FinishedEpisode(t, i, infos[i]["episode"]) for i in np.flatnonzero(done)]
    buf.values[-1] = policy_step(model, torch.from_numpy(obs).to(device), generator)[2]
    return obs, finished


# --- 2. GAE: advantages and value targets (raw units) ---------------------------------
def gae(
    rewards: torch.Tensor, values: torch.Tensor, dones: torch.Tensor, gamma: float, lam: float
) -> torch.Tensor:
    """Advantages (T, E) of E envs at once; `values` is (T + 1, E), row T bootstraps. A
    run alone and a cohort (all its seeds' envs side by side) both call this."""
    advantages = torch.zeros_like(rewards)
    last = torch.zeros_like(rewards[0])
    for t in reversed(range(rewards.shape[0])):
        keep = 1.0 - dones[t]
        delta = rewards[t] + gamma * values[t + 1] * keep - values[t]
        last = delta + gamma * lam * keep * last
        advantages[t] = last
    return advantages


def compute_gae(buf: Rollout, gamma: float, lam: float) -> tuple[torch.Tensor, torch.Tensor]:
    """(advantages, returns), each (T, N); returns = advantages + values."""
    advantages = gae(buf.rewards, buf.values, buf.dones, gamma, lam)
    return advantages, advantages + buf.values[:-1]


# --- 3. Update: epochs x minibatches of clipped-surrogate PPO -------------------------
LOSS_STATS = ("policy", "value", "entropy", "kl", "clip")


def ppo_loss(
    logprobs_all: torch.Tensor,
    value_pred: torch.Tensor,
    actions: torch.Tensor,
    old_logprobs: torch.Tensor,
    advantages: torch.Tensor,
    targets: torch.Tensor,
    cfg: PPOConfig,
) -> tuple[torch.Tensor, torch.Tensor]:
    """One run's loss on one minibatch, and its statistics (`LOSS_STATS` order) detached:
    clipped surrogate on rollout-normalised advantages, MSE to the targets normalised
    after the caller folded them into the EWMA. A run alone's and each cohort seed's."""
    logprobs = logprobs_all.gather(1, actions[:, None])[:, 0]
    log_ratio = logprobs - old_logprobs
    ratio = log_ratio.exp()
    clipped = ratio.clamp(1.0 - cfg.clip, 1.0 + cfg.clip)
    policy_loss = -torch.min(advantages * ratio, advantages * clipped).mean()
    value_loss = F.mse_loss(value_pred, targets)
    entropy = -(logprobs_all.exp() * logprobs_all).sum(-1).mean()
    loss = policy_loss + cfg.vf_coef * value_loss - cfg.ent_coef * entropy
    ratio, log_ratio = ratio.detach(), log_ratio.detach()
    kl = ((ratio - 1) - log_ratio).mean()
    clip = ((ratio - 1).abs() > cfg.clip).float().mean()
    stats = torch.stack([policy_loss.detach(), value_loss.detach(), entropy.detach(), kl, clip])
    return loss, stats


def ppo_update(
    model: ActorCritic,
    optimizer: torch.optim.Optimizer,
    buf: Rollout,
    advantages: torch.Tensor,
    returns: torch.Tensor,
    cfg: PPOConfig,
    rng: np.random.Generator,
) -> dict[str, float]:
    """Run the PPO epochs on one rollout; mean losses and diagnostics. `advantages` and
    `returns` are `compute_gae`'s (T, N), computed by the caller (AD keeps the returns)."""
    advantages = (advantages - advantages.mean()) / (advantages.std() + 1e-8)

    inputs = buf.policy_inputs()
    actions, old_logprobs = buf.actions.flatten(), buf.logprobs.flatten()
    advantages, returns = advantages.flatten(), returns.flatten()
    batch = actions.shape[0]
    mb_size = batch // cfg.minibatches

    model.train()
    stats: dict[str, list[float]] = {k: [] for k in LOSS_STATS}
    for _ in range(cfg.epochs):
        order = torch.from_numpy(rng.permutation(batch)).to(actions.device)
        for start in range(0, batch, mb_size):
            idx = order[start : start + mb_size]
            logprobs_all, value_pred = model(*(x[idx] for x in inputs))
            model.value_norm.update(returns[idx])
            loss, minibatch = ppo_loss(
                logprobs_all,
                value_pred,
                actions[idx],
                old_logprobs[idx],
                advantages[idx],
                model.value_norm.normalize(returns[idx]),
                cfg,
            )
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), cfg.max_grad_norm)
            optimizer.step()
            for key, value in zip(LOSS_STATS, minibatch.cpu().tolist(), strict=True):
                stats[key].append(value)
    return {key: float(np.mean(values)) for key, values in stats.items()}


# --- The trainer's view of PPO (`trainer.Agent`) --------------------------------------
class PPOAgent:
    """PPO's model, optimiser and rollout buffer behind the trainer's agent interface."""

    def __init__(self, model_cfg: ModelConfig, cfg: PPOConfig, device: torch.device):
        self.cfg = cfg
        self.model = ActorCritic(model_cfg, cfg.value_norm_decay).to(device)
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=cfg.lr)
        self.buf = Rollout.empty(cfg, device)

    def collect(
        self, env: VecEnv, obs: np.ndarray, generator: torch.Generator
    ) -> tuple[np.ndarray, list[FinishedEpisode]]:
        return collect_rollout(self.model, env, obs, self.buf, generator)

    def update(self, rng: np.random.Generator) -> dict[str, float]:
        advantages, returns = compute_gae(self.buf, self.cfg.gamma, self.cfg.gae_lambda)
        return ppo_update(self.model, self.optimizer, self.buf, advantages, returns, self.cfg, rng)

    def episodes_reset(self) -> None:
        """PPO keeps no per-episode state."""

    def state_dict(self) -> dict[str, Any]:
        return {"model": self.model.state_dict(), "optimizer": self.optimizer.state_dict()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.model.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])
