"""Achievement Distillation (AD), readable top to bottom: rollout with memory, PPO, aux phase.

Moon et al. 2023 (NeurIPS), code snu-mllab/Achievement-Distillation; the paper's Table 1
rows AD, AD + 0.96M Crafter pretraining and AD + EnvGen (docs/agent.md, "Achievement
Distillation"). Each part, with the reference's file:

1. Rollout (`sample.py`, `storage.py`): PPO's plus a per-env *memory* read by policy and
   value: a step rewarded above `unlock_reward` unlocked an achievement and sets it to
   normalize(latent(next obs) - latent(obs)); an episode end resets it to zero.
2. Policy phase (`algorithm/ppo_ad.py`): `ppo.ppo_update` with the memory as an input.
3. Auxiliary phase, every `aux_every` updates over those rollouts' whole episodes (not
   those a mixture switch cut): `aux_epochs` passes of all *matching* then all
   *prediction* batches, each loss with its own Adam. Matching pairs two episodes'
   achievements by entropic partial optimal transport and pulls pairs together against
   a random achievement of the other episode; prediction predicts the next achievement
   from (obs, action, memory) against a random step of the same episode. Both add
   KL(policy || policy before the phase) and a value regression (`pi_dist`, `vf_dist`).
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Iterator
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from envgen.agents import ppo
from envgen.agents.ad_networks import ADActorCritic
from envgen.agents.config import ADConfig, ModelConfig, PPOConfig
from envgen.agents.networks import OBS_SHAPE


@dataclasses.dataclass
class ADRollout(ppo.Rollout):
    """`ppo.Rollout` plus the memory each step's policy read and where episodes start."""

    memory: torch.Tensor  # float32 (T + 1, N, H); row T bootstraps
    starts: torch.Tensor  # bool (T, N): obs[t] is the first observation of an episode

    @classmethod
    def allocate(cls, cfg: PPOConfig, hidden: int, device: torch.device) -> ADRollout:
        base = ppo.Rollout.empty(cfg, device)
        t, n = cfg.num_steps, cfg.num_envs
        return cls(
            **{f.name: getattr(base, f.name) for f in dataclasses.fields(base)},
            memory=torch.zeros((t + 1, n, hidden), device=device),
            starts=torch.zeros((t, n), dtype=torch.bool, device=device),
        )

    def policy_inputs(self) -> tuple[torch.Tensor, ...]:
        return (self.obs.flatten(0, 1), self.memory[:-1].flatten(0, 1))


@dataclasses.dataclass
class EpisodeMemory:
    """What carries over from one rollout to the next for each env."""

    memory: torch.Tensor  # float32 (N, H): the latest achievement's representation
    starts: torch.Tensor  # bool (N,): the current observation begins an episode

    @classmethod
    def fresh(cls, num_envs: int, hidden: int, device: torch.device) -> EpisodeMemory:
        return cls(
            torch.zeros((num_envs, hidden), device=device),
            torch.ones(num_envs, dtype=torch.bool, device=device),
        )


# --- 1. Rollout: PPO's, with the memory updated at every achievement ------------------
@torch.no_grad()
def collect_rollout(
    model: ADActorCritic,
    env: ppo.VecEnv,
    obs: np.ndarray,
    buf: ADRollout,
    generator: torch.Generator,
    carry: EpisodeMemory,
    unlock_reward: float,
) -> tuple[np.ndarray, list[ppo.FinishedEpisode]]:
    """Fill `buf` from `env` starting at `obs`, updating `carry` in place."""
    model.eval()
    device = buf.obs.device
    finished: list[ppo.FinishedEpisode] = []
    for t in range(buf.obs.shape[0]):
        obs_t = torch.from_numpy(obs).to(device)
        latent = model.encode(obs_t)
        logprobs, value = model.heads(latent, carry.memory)
        actions = ppo.sample_actions(logprobs, generator)
        obs, reward, terminated, truncated, infos = env.step(actions.cpu().numpy())
        buf.obs[t] = obs_t
        buf.memory[t] = carry.memory
        buf.starts[t] = carry.starts
        buf.actions[t] = actions
        buf.logprobs[t] = logprobs.gather(1, actions[:, None])[:, 0]
        buf.values[t] = model.value_norm.denormalize(value)
        buf.rewards[t] = torch.from_numpy(np.asarray(reward, np.float32)).to(device)
        done = torch.from_numpy(np.logical_or(terminated, truncated)).to(device)
        buf.dones[t] = done.float()
        finished += [
            ppo.FinishedEpisode(t, i, infos[i]["episode"]) for i in np.flatnonzero(done.cpu())
        ]

        # Memory: the new achievement's representation; zero when the episode ended.
        unlocked = buf.rewards[t] > unlock_reward
        if unlocked.any():
            after = model.encode(torch.from_numpy(obs).to(device))
            achieved = F.normalize(after - latent, dim=-1)
            carry.memory = torch.where(unlocked[:, None], achieved, carry.memory)
        carry.memory = carry.memory.masked_fill(done[:, None], 0.0)
        carry.starts = done
    buf.memory[-1] = carry.memory
    last = model(torch.from_numpy(obs).to(device), carry.memory)[1]
    buf.values[-1] = model.value_norm.denormalize(last)
    return obs, finished


# --- 3a. Aux buffer: the last `aux_every` rollouts, split into episodes with their goals ---
class AuxBuffer:
    """Rollouts since the last auxiliary phase, time-major (aux_every * T, N, ...)."""

    KEYS = ("obs", "actions", "memory", "returns", "rewards", "dones", "starts")

    def __init__(self, ad: ADConfig, ppo_cfg: PPOConfig, hidden: int, device: torch.device):
        self.t = ppo_cfg.num_steps
        size, n = ad.aux_every * ppo_cfg.num_steps, ppo_cfg.num_envs
        self.data = {
            "obs": torch.zeros((size, n, *OBS_SHAPE), dtype=torch.uint8, device=device),
            "actions": torch.zeros((size, n), dtype=torch.int64, device=device),
            "memory": torch.zeros((size, n, hidden), device=device),
            "returns": torch.zeros((size, n), device=device),
            "rewards": torch.zeros((size, n), device=device),
            "dones": torch.zeros((size, n), device=device),
            "starts": torch.zeros((size, n), dtype=torch.bool, device=device),
        }
        self.filled = 0  # rollouts stored

    def add(self, buf: ADRollout, returns: torch.Tensor) -> None:
        rows = slice(self.filled * self.t, (self.filled + 1) * self.t)
        source = {
            **{key: getattr(buf, key) for key in ("obs", "actions", "rewards", "dones", "starts")},
            "memory": buf.memory[:-1],
            "returns": returns,
        }
        for key in self.KEYS:
            self.data[key][rows] = source[key]
        self.filled += 1

    def steps(self) -> Steps:
        """The stored rollouts' steps, flat."""
        rows, n = self.filled * self.t, self.data["dones"].shape[1]
        flat = {k: self.data[k][:rows].flatten(0, 1) for k in ("obs", "actions", "memory")}
        return Steps(**flat, returns=self.data["returns"][:rows].flatten(), num_envs=n)

    def episodes(self, unlock_reward: float) -> list[Episode]:
        """Episodes that both started and ended in the buffer, with at least one goal:
        found on the host, their rows and goals index tensors on the buffer's device."""
        rows, n = self.filled * self.t, self.data["dones"].shape[1]
        device = self.data["dones"].device
        starts, dones = self.data["starts"][:rows].cpu(), self.data["dones"][:rows].cpu()
        rewards = self.data["rewards"][:rows].cpu()
        out = []
        for env in range(n):
            first = torch.nonzero(starts[:, env]).flatten().tolist()
            for begin, end in zip(first[:-1], first[1:], strict=True):
                if dones[end - 1, env] == 0:  # cut by a mixture switch, not ended
                    continue
                steps = torch.arange(begin, end, device=device) * n + env
                # Goal k: the step whose action unlocked an achievement, if the next
                # observation is in the episode (`Buffer.get_goals`).
                goals = torch.nonzero(rewards[begin : end - 1, env] > unlock_reward).flatten() + 1
                if len(goals):
                    out.append(Episode(steps, goals.to(device)))
        return out

    def state_dict(self) -> dict[str, Any]:
        rows = self.filled * self.t
        return {"filled": self.filled, **{k: v[:rows].clone() for k, v in self.data.items()}}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.filled = state["filled"]
        for key in self.KEYS:
            self.data[key][: len(state[key])] = state[key]


@dataclasses.dataclass(frozen=True)
class Steps:
    """The aux buffer's steps, flat: row t * num_envs + env, t counted over the buffer."""

    obs: torch.Tensor  # uint8 (S, 64, 64, 3)
    actions: torch.Tensor  # int64 (S,)
    memory: torch.Tensor  # float32 (S, H): the memory the policy read
    returns: torch.Tensor  # float32 (S,): GAE returns, raw units (the reference's vtargs)
    num_envs: int

    def goal_obs(self, after: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Observations before and after unlocks given by their after-rows (-1: none,
        an all-zero image); the before row is one time step (num_envs rows) back."""
        return self.obs[after - self.num_envs], self.obs[after]


@dataclasses.dataclass(frozen=True)
class Episode:
    """An episode in the aux buffer: its flat rows and its goal positions."""

    steps: torch.Tensor  # int64 (L,): flat rows of the episode's steps, in order
    goals: torch.Tensor  # int64 (K,): positions p in 1..L-1 where obs[p] follows an unlock

    @property
    def goal_after(self) -> torch.Tensor:
        """Flat rows of the observation after each unlock (K,)."""
        return self.steps[self.goals]


def entropic_partial_transport(cost: np.ndarray, reg: float, iters: int) -> np.ndarray:
    """Transport plan (A, B) of entropic partial OT with unit masses, moving min(A, B):
    Dykstra's iterative Bregman projections (Benamou et al. 2015, prop. 5) onto row and
    column sums <= 1 and total mass min(A, B), in float64, as the reference's POT call
    `ot.partial.entropic_partial_wasserstein(a=1, b=1, M, reg, numItermax)`."""
    mass = float(min(cost.shape))
    plan = np.exp(-cost.astype(np.float64) / reg)
    plan *= mass / plan.sum()
    q_rows, q_cols, q_mass = np.ones_like(plan), np.ones_like(plan), np.ones_like(plan)
    for _ in range(iters):
        prev = plan * q_rows
        rows = np.minimum(1.0 / prev.sum(axis=1), 1.0)[:, None] * prev
        q_rows = q_rows * plan / rows
        prev = rows * q_cols
        cols = prev * np.minimum(1.0 / prev.sum(axis=0), 1.0)[None, :]
        q_cols = q_cols * rows / cols
        prev = cols * q_mass
        plan_next = prev * (mass / prev.sum())
        q_mass = q_mass * cols / plan_next
        plan = plan_next
        if not np.isfinite(plan).all():
            break
    return plan


# --- 3b. Batches: matching (across episodes) and prediction (within an episode) -------
def _on(device: torch.device, draw: np.ndarray) -> torch.Tensor:
    """A numpy draw as an index tensor on `device`: the host RNG draws, so that a run's
    batches do not depend on its device; the result moves once per batch."""
    return torch.from_numpy(draw).to(device)


def _chunks(
    n: int, size: int, rng: np.random.Generator, device: torch.device
) -> list[torch.Tensor]:
    """A random order of range(n) in chunks of at most `size` (the last may be shorter)."""
    return list(_on(device, rng.permutation(n)).split(size))


def match_batches(
    model: ADActorCritic,
    episodes: list[Episode],
    steps: Steps,
    cfg: ADConfig,
    rng: np.random.Generator,
) -> Iterator[dict[str, torch.Tensor]]:
    """Goal rows of anchors, positives, negatives across episodes (`get_match_data_loader`).

    For each source episode (random order) and up to `match_partners` others, goals (rows
    of the observation after an unlock) are paired where the partial transport plan under
    cost 1 - cosine puts mass > `match_threshold`; the negative is a random goal of the
    partner. Each batch also carries random steps of the source for the regularisers.
    Lazy, so that the representations come from the model as it trains (as the reference)."""
    device = steps.obs.device
    for i in rng.permutation(len(episodes)).tolist():
        source = episodes[i]
        with torch.no_grad():
            rep_s = model.achievement(*steps.goal_obs(source.goal_after))
        anchors, positives, negatives = [], [], []
        for j in rng.permutation(len(episodes) - 1)[: cfg.match_partners].tolist():
            partner = episodes[j + (j >= i)]  # every episode but the source
            with torch.no_grad():
                rep_t = model.achievement(*steps.goal_obs(partner.goal_after))
            cost = (1.0 - rep_s @ rep_t.T).cpu().numpy()
            plan = entropic_partial_transport(cost, cfg.ot_reg, cfg.ot_iters)
            rows, cols = (_on(device, x) for x in np.nonzero(plan > cfg.match_threshold))
            if len(rows) == 0:
                continue
            random_goals = _on(device, rng.integers(0, len(partner.goals), len(cols)))
            anchors.append(source.goal_after[rows])
            positives.append(partner.goal_after[cols])
            negatives.append(partner.goal_after[random_goals])
        if not anchors:
            continue
        anchor, positive, negative = torch.cat(anchors), torch.cat(positives), torch.cat(negatives)
        rows = source.steps[_on(device, rng.integers(0, len(source.steps), len(anchor)))]
        for idx in _chunks(len(anchor), cfg.batch_size, rng, device):
            yield {
                "anchor": anchor[idx],
                "positive": positive[idx],
                "negative": negative[idx],
                "steps": rows[idx],
            }


def prediction_batches(
    episodes: list[Episode], cfg: ADConfig, rng: np.random.Generator
) -> Iterator[dict[str, torch.Tensor]]:
    """Steps, their episode's next goal, and negative steps (`get_pred_data_loader`):
    each step is a positive whose anchor is the next achievement after it (after the last
    one: (last observation, all-zero image), "none follows"); the negative is a step of
    the same episode in random permutation."""
    for i in rng.permutation(len(episodes)).tolist():
        episode = episodes[i]
        device = episode.steps.device
        length, goals = len(episode.steps), len(episode.goals)
        positions = torch.arange(length, device=device)
        k = torch.searchsorted(episode.goals, positions, right=True)  # next goal
        anchor = torch.where(k < goals, episode.goal_after[k.clamp(max=goals - 1)], -1)
        negative = episode.steps[_on(device, rng.permutation(length))]
        for idx in _chunks(length, cfg.batch_size, rng, device):
            yield {
                "anchor": anchor[idx],
                "last": episode.steps[-1].expand(len(idx)),
                "positive": episode.steps[idx],
                "negative": negative[idx],
            }


# --- 3c. Losses (`PPOADModel.compute_match_losses`, `compute_pred_losses`) ------------
def _contrastive(
    anchor: torch.Tensor, positive: torch.Tensor, negative: torch.Tensor, temperature: float
) -> torch.Tensor:
    """Cross-entropy of picking the positive among (positive, negative) by cosine / T."""
    logits = torch.stack([(anchor * positive).sum(-1), (anchor * negative).sum(-1)], dim=-1)
    if logits.is_cuda and torch.are_deterministic_algorithms_enabled():
        # CUDA's nll_loss has no deterministic kernel (use_deterministic_algorithms raises);
        # the same loss without it: the positive is class 0.
        return -F.log_softmax(logits / temperature, dim=-1)[:, 0].mean()
    target = torch.zeros(len(logits), dtype=torch.int64, device=logits.device)
    return F.cross_entropy(logits / temperature, target)


def _regularisers(
    model: ADActorCritic,
    old: ADActorCritic,
    latent: torch.Tensor,
    steps: Steps,
    rows: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor]:
    """KL(policy || policy before the phase) and value MSE to the normalised returns."""
    memory = steps.memory[rows]
    logprobs, value = model.heads(latent, memory)
    with torch.no_grad():
        old_logprobs = old(steps.obs[rows], memory)[0]
    pi_dist = (logprobs.exp() * (logprobs - old_logprobs)).sum(-1).mean()
    returns = steps.returns[rows]
    model.value_norm.update(returns)  # as the reference's `ScaledMSEHead.mse_loss`
    vf_dist = F.mse_loss(value, model.value_norm.normalize(returns))
    return pi_dist, vf_dist


def match_loss(
    model: ADActorCritic, old: ADActorCritic, batch: dict, steps: Steps, cfg: ADConfig
) -> dict[str, torch.Tensor]:
    """Matching: the anchor's representation (trained) against positive and negative."""
    anchor = model.achievement(*steps.goal_obs(batch["anchor"]))
    with torch.no_grad():
        positive = model.achievement(*steps.goal_obs(batch["positive"]))
        negative = model.achievement(*steps.goal_obs(batch["negative"]))
    rows = batch["steps"]
    pi_dist, vf_dist = _regularisers(model, old, model.encode(steps.obs[rows]), steps, rows)
    return {
        "match": _contrastive(anchor, positive, negative, cfg.temperature),
        "pi_dist": pi_dist,
        "vf_dist": vf_dist,
    }


def prediction_loss(
    model: ADActorCritic, old: ADActorCritic, batch: dict, steps: Steps, cfg: ADConfig
) -> dict[str, torch.Tensor]:
    """Prediction: the next-achievement predictions (trained) against the anchor."""
    anchor_rows = batch["anchor"]
    none = anchor_rows < 0
    before, after = steps.goal_obs(anchor_rows.clamp(min=0))
    before = torch.where(none[:, None, None, None], steps.obs[batch["last"]], before)
    after = after.masked_fill(none[:, None, None, None], 0)
    with torch.no_grad():
        anchor = model.achievement(before, after)
    rows = torch.cat([batch["positive"], batch["negative"]])
    latent = model.encode(steps.obs[rows])
    pred = model.predict_next(latent, steps.actions[rows], steps.memory[rows])
    positive, negative = pred.chunk(2)
    pi_dist, vf_dist = _regularisers(model, old, latent, steps, rows)
    return {
        "prediction": _contrastive(anchor, positive, negative, cfg.temperature),
        "pi_dist": pi_dist,
        "vf_dist": vf_dist,
    }


# --- 3d. The auxiliary phase ----------------------------------------------------------
def aux_phase(
    model: ADActorCritic,
    optimizers: dict[str, torch.optim.Optimizer],
    buffer: AuxBuffer,
    cfg: ADConfig,
    max_grad_norm: float,
    rng: np.random.Generator,
) -> dict[str, float]:
    """`aux_epochs` of matching then prediction updates; mean losses (empty: no episode).
    `optimizers` has "match" and "prediction" (the reference keeps one Adam for each)."""
    episodes = buffer.episodes(cfg.unlock_reward)
    steps = buffer.steps()
    old = copy.deepcopy(model).eval()
    model.train()
    stats: dict[str, list[float]] = {"match": [], "prediction": [], "pi_dist": [], "vf_dist": []}
    for _ in range(cfg.aux_epochs):
        for kind, batches, loss_fn in (
            ("match", match_batches(model, episodes, steps, cfg, rng), match_loss),
            ("prediction", prediction_batches(episodes, cfg, rng), prediction_loss),
        ):
            for batch in batches:
                losses = loss_fn(model, old, batch, steps, cfg)
                loss = (
                    losses[kind]
                    + cfg.pi_dist_coef * losses["pi_dist"]
                    + cfg.vf_dist_coef * losses["vf_dist"]
                )
                optimizers[kind].zero_grad(set_to_none=True)
                loss.backward()
                nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)
                optimizers[kind].step()
                for key, value in losses.items():
                    stats[key].append(value.item())
    return {key: float(np.mean(v)) for key, v in stats.items() if v}


# --- The trainer's view of AD (`trainer.Agent`) ---------------------------------------
class ADAgent:
    """AD's model, three optimisers (PPO, matching, prediction), buffers and memory."""

    def __init__(
        self,
        model_cfg: ModelConfig,
        cfg: PPOConfig,
        device: torch.device,
        ad_cfg: ADConfig | None = None,
    ):
        self.cfg, self.ad_cfg = cfg, ad_cfg or ADConfig()
        self.model = ADActorCritic(model_cfg, cfg.value_norm_decay).to(device)
        self.optimizers = {
            name: torch.optim.Adam(self.model.parameters(), lr=cfg.lr)
            for name in ("ppo", "match", "prediction")
        }
        h = model_cfg.hidden_size
        self.buf = ADRollout.allocate(cfg, h, device)
        self.aux = AuxBuffer(self.ad_cfg, cfg, h, device)
        self.carry = EpisodeMemory.fresh(cfg.num_envs, h, device)

    def collect(
        self, env: ppo.VecEnv, obs: np.ndarray, generator: torch.Generator
    ) -> tuple[np.ndarray, list[ppo.FinishedEpisode]]:
        return collect_rollout(
            self.model, env, obs, self.buf, generator, self.carry, self.ad_cfg.unlock_reward
        )

    def update(self, rng: np.random.Generator) -> dict[str, float]:
        """PPO on the rollout; every `aux_every` rollouts, the auxiliary phase after it."""
        advantages, returns = ppo.compute_gae(self.buf, self.cfg.gamma, self.cfg.gae_lambda)
        self.aux.add(self.buf, returns)
        losses = ppo.ppo_update(
            self.model, self.optimizers["ppo"], self.buf, advantages, returns, self.cfg, rng
        )
        if self.aux.filled == self.ad_cfg.aux_every:
            aux = aux_phase(
                self.model, self.optimizers, self.aux, self.ad_cfg, self.cfg.max_grad_norm, rng
            )
            losses.update({f"aux_{k}": v for k, v in aux.items()})
            self.aux.filled = 0
        return losses

    def episodes_reset(self) -> None:
        """Every env began a new episode (fresh env or mixture switch): empty memories."""
        self.carry = EpisodeMemory.fresh(*self.carry.memory.shape, self.carry.memory.device)

    def state_dict(self) -> dict[str, Any]:
        return {
            "model": self.model.state_dict(),
            "optimizer": self.optimizers["ppo"].state_dict(),
            "aux_optimizers": {k: self.optimizers[k].state_dict() for k in ("match", "prediction")},
            "aux_buffer": self.aux.state_dict(),
            "memory": {"memory": self.carry.memory, "starts": self.carry.starts},
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.model.load_state_dict(state["model"])
        self.optimizers["ppo"].load_state_dict(state["optimizer"])
        for key, value in state["aux_optimizers"].items():
            self.optimizers[key].load_state_dict(value)
        self.aux.load_state_dict(state["aux_buffer"])
        self.carry = EpisodeMemory(**state["memory"])
