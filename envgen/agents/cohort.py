"""`CohortPPO`: W seeds of one PPO run config trained as one batched model.

Why: one paper-network run leaves a GPU mostly idle (one run 942 env steps/s, eight runs
as eight processes 1,289 on an H100; docs/agent.md, "On a GPU"). Here the W networks'
parameters are stacked (W, ...) and one forward serves every seed
(`torch.func.vmap` over `torch.func.functional_call` of the very `ActorCritic` a run
alone uses): W times fewer kernel launches, W times larger kernels.

Nothing mixes seeds. Each seed keeps its own loss (the total is a sum of per-seed
means, so a seed's gradient is its own loss's), gradient-norm clip, Adam moments (Adam is
elementwise, so one Adam over stacked tensors is W Adams), value normaliser, advantage
normalisation, GAE, action generator, minibatch shuffle and env seeds, all derived from
the seed as a run alone derives them, and its Table 9 rollout (8 envs x 512 steps, 8
minibatches, 3 epochs). A seed's numbers are fixed by (seed, W, device model, software,
precision), not by its slot or its neighbours (tests/test_agents_cohort.py); W = 1 is
not a cohort (the pipeline trains it with `envgen.agents.trainer.Trainer`).

Per rollout the host and the device meet once per vector step (the actions come back)
and once per rollout for rewards and dones; GAE runs in NumPy over all envs at once,
and losses stay on the device until the rollout's update is done.

`collect_steps` and `update_steps` are the rollout and the update as generators (one
yield per vector step, resp. per minibatch) so that a pipelined cohort
(`envgen.agents.cohort_trainer`, `groups=2`: two `CohortPPO`s of W/2 seeds) can run one
group's update and the other's collection interleaved in one thread (`interleave`), the
collection on its own CUDA stream (`side_stream`). `collect` and `update` drain them: an
unpipelined cohort computes exactly what it computed before they existed.
"""

from __future__ import annotations

import contextlib
import dataclasses
import warnings
from collections.abc import Generator, Sequence
from typing import Any

import numpy as np
import torch
from torch.func import functional_call, stack_module_state, vmap

from envgen.agents.config import ModelConfig, PPOConfig
from envgen.agents.networks import OBS_SHAPE, ActorCritic
from envgen.agents.normalizer import _DEBIAS_MIN, _VAR_MIN
from envgen.agents.ppo import FinishedEpisode, VecEnv
from envgen.agents.seeding import derive_seed
from envgen.errors import ConfigError

STATS = ("policy", "value", "entropy", "kl", "clip")
NORM_BUFFERS = ("value_norm.mean_ewma", "value_norm.mean_sq_ewma", "value_norm.debias")


class StackedEwma:
    """W value normalisers (`envgen.agents.normalizer.EwmaNormalizer`) as (W,) tensors."""

    def __init__(self, size: int, decay: float, device: torch.device):
        self.decay = decay
        self.mean_ewma = torch.zeros(size, device=device)
        self.mean_sq_ewma = torch.zeros(size, device=device)
        self.debias = torch.zeros(size, device=device)

    def update(self, x: torch.Tensor) -> None:
        """Fold each seed's batch (row of `x`, shape (W, n)) into its statistics."""
        x, d = x.detach().float(), self.decay
        self.mean_ewma.mul_(d).add_(x.mean(1) * (1 - d))
        self.mean_sq_ewma.mul_(d).add_((x**2).mean(1) * (1 - d))
        self.debias.mul_(d).add_(1 - d)

    def mean_std(self) -> tuple[torch.Tensor, torch.Tensor]:
        debias = self.debias.clamp(min=_DEBIAS_MIN)
        mean = self.mean_ewma / debias
        var = (self.mean_sq_ewma / debias - mean**2).clamp(min=_VAR_MIN)
        return mean[:, None], var.sqrt()[:, None]

    def normalize(self, x: torch.Tensor) -> torch.Tensor:
        mean, std = self.mean_std()
        return (x - mean) / std

    def denormalize(self, x: torch.Tensor) -> torch.Tensor:
        mean, std = self.mean_std()
        return x * std + mean

    def tensors(self) -> tuple[torch.Tensor, ...]:
        return self.mean_ewma, self.mean_sq_ewma, self.debias


@dataclasses.dataclass
class CohortRollout:
    """One rollout of every seed: (W, T, N, ...) on the device; rewards and dones on the
    host until the rollout ends (they move once, with GAE's result)."""

    obs: torch.Tensor
    actions: torch.Tensor
    logprobs: torch.Tensor
    values: torch.Tensor  # (W, T + 1, N), raw units
    rewards: np.ndarray  # (T, W * N)
    dones: np.ndarray  # (T, W * N)

    @classmethod
    def empty(cls, size: int, cfg: PPOConfig, device: torch.device) -> CohortRollout:
        w, t, n = size, cfg.num_steps, cfg.num_envs
        return cls(
            obs=torch.zeros((w, t, n, *OBS_SHAPE), dtype=torch.uint8, device=device),
            actions=torch.zeros((w, t, n), dtype=torch.int64, device=device),
            logprobs=torch.zeros((w, t, n), device=device),
            values=torch.zeros((w, t + 1, n), device=device),
            rewards=np.zeros((t, w * n), np.float32),
            dones=np.zeros((t, w * n), np.float32),
        )


def drain(steps: Generator[None, None, Any]) -> Any:
    """Run a step generator (`CohortPPO.collect_steps`, `update_steps`) to its end; its
    return value."""
    while True:
        try:
            next(steps)
        except StopIteration as stop:
            return stop.value


def interleave(
    update: Generator[None, None, Any],
    collect: Generator[None, None, Any] | None,
    cfg: PPOConfig,
) -> tuple[Any, Any]:
    """(update's result, collect's result): one seed group's update and another group's
    collection, cooperatively in this thread, in a fixed order. The update yields once per
    minibatch (`cfg.epochs * cfg.minibatches` times), the collection once per vector step
    (`cfg.num_steps`); after the update's i-th yield the collection has made
    floor(i * num_steps / yields) steps, so the two end together. Each generator's own
    steps run in the order they run alone, and the two share no tensor, generator or env:
    every number either computes is the one it computes alone (tests/test_agents_cohort.py
    compares a pipelined cohort with its groups trained one after the other)."""
    yields, steps = cfg.epochs * cfg.minibatches, cfg.num_steps
    collected: list[Any] = []
    made = 0

    def advance(until: int) -> None:
        nonlocal made
        while collect is not None and not collected and made < until:
            try:
                next(collect)
                made += 1
            except StopIteration as stop:
                collected.append(stop.value)

    i = 0
    while True:
        try:
            next(update)
        except StopIteration as stop:
            result = stop.value
            break
        i += 1
        advance(i * steps // yields)
    advance(steps + 1)  # the rest, and the collection's end (its last values)
    return result, (collected[0] if collected else None)


def gae_numpy(
    rewards: np.ndarray, values: np.ndarray, dones: np.ndarray, gamma: float, lam: float
) -> np.ndarray:
    """Advantages (T, E) of every env at once; `values` is (T + 1, E), float32 throughout."""
    gamma, lam = np.float32(gamma), np.float32(lam)
    advantages = np.zeros_like(rewards)
    last = np.zeros_like(rewards[0])
    keep = np.float32(1.0) - dones
    for t in range(rewards.shape[0] - 1, -1, -1):
        delta = rewards[t] + gamma * values[t + 1] * keep[t] - values[t]
        last = delta + gamma * lam * keep[t] * last
        advantages[t] = last
    return advantages


class CohortPPO:
    """The stacked model, its optimiser and rollout buffer; per-seed slices for checkpoints."""

    def __init__(
        self,
        model_cfg: ModelConfig,
        cfg: PPOConfig,
        seeds: Sequence[int],
        device: torch.device,
        *,
        side_stream: bool = False,
    ):
        if len(seeds) < 2:
            raise ValueError("a cohort trains at least 2 seeds (one run: trainer.Trainer)")
        if model_cfg.channels_last:  # vmap cannot query or make NHWC strides
            raise ConfigError(
                "channels_last", "a cohort's batched network runs NCHW only; leave it off"
            )
        self.cfg, self.seeds, self.device, self.size = cfg, list(seeds), device, len(seeds)
        models = []
        for seed in self.seeds:  # each seed's initial weights, exactly as a run alone
            with torch.random.fork_rng(devices=[]):
                torch.manual_seed(derive_seed(seed, "model"))
                models.append(ActorCritic(model_cfg, cfg.value_norm_decay).to(device))
        self.base = models[0]
        params, _ = stack_module_state(models)
        self.names = [name for name, _ in self.base.named_parameters()]
        self.params = {name: params[name].detach().clone().requires_grad_() for name in self.names}
        self.value_norm = StackedEwma(self.size, cfg.value_norm_decay, device)
        self.optimizer = torch.optim.Adam(list(self.params.values()), lr=cfg.lr)
        self.buf = CohortRollout.empty(self.size, cfg, device)
        self._forward = vmap(self._one_forward, in_dims=(0, 0))
        self._graph: torch.cuda.CUDAGraph | bool | None = None  # False: capture failed
        pin = device.type == "cuda"
        # A pipelined cohort's group (`CohortTrainer(groups=2)`) collects on a stream of
        # its own, of high priority, so that its small policy steps are not queued behind
        # the other group's update kernels; elsewhere (and off CUDA) no stream is switched.
        self._side = torch.cuda.Stream(device, priority=-1) if pin and side_stream else None
        self._collected: torch.cuda.Event | None = None
        self._updated: torch.cuda.Event | None = None
        if self._side is not None:  # the initial parameters, written on the default stream
            self._updated = torch.cuda.Event()
            self._updated.record(torch.cuda.current_stream(device))
        self._host_obs = torch.zeros(
            (self.size * cfg.num_envs, *OBS_SHAPE), dtype=torch.uint8, pin_memory=pin
        )

    def _one_forward(self, params: dict[str, torch.Tensor], obs: torch.Tensor):
        return functional_call(self.base, params, (obs,))

    def forward(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Log-probabilities (W, B, A) and normalised values (W, B) of obs (W, B, 64, 64, 3)."""
        return self._forward(self.params, obs)

    # --- 1. rollout -------------------------------------------------------------------
    @torch.no_grad()
    def _policy_core(self, obs: torch.Tensor, noise: torch.Tensor):
        """Actions (Gumbel-max on `noise`), their log-probabilities and raw values."""
        logprobs, value = self.forward(obs)
        gumbel = -torch.log(-torch.log(noise.clamp(1e-12, 1.0 - 1e-7)))
        actions = (logprobs + gumbel).argmax(dim=-1)
        chosen = logprobs.gather(2, actions[..., None])[..., 0]
        return actions, chosen, self.value_norm.denormalize(value)

    def _policy_step(self, obs: torch.Tensor, generators: Sequence[torch.Generator]):
        """`_policy_core` on each seed's noise; on CUDA replayed from a CUDA graph (one
        launch instead of the vmapped network's hundreds; the same kernels, the same
        numbers), which reads the parameters and normaliser where Adam updates them."""
        w, n = obs.shape[:2]
        noise = torch.stack(
            [
                torch.rand((n, self.base.cfg.num_actions), generator=g, device=self.device)
                for g in generators
            ]
        )
        if self.device.type != "cuda" or self._graph is False:
            return self._policy_core(obs, noise)
        if self._graph is None:
            try:
                self._capture_policy(obs, noise)
            except RuntimeError as exc:  # a kernel that cannot be captured: stay eager
                warnings.warn(f"cohort policy step runs eagerly: {exc}", stacklevel=2)
                self._graph = False
                return self._policy_core(obs, noise)
        self._graph_in[0].copy_(obs)
        self._graph_in[1].copy_(noise)
        self._graph.replay()
        return self._graph_out

    def _capture_policy(self, obs: torch.Tensor, noise: torch.Tensor) -> None:
        self._graph_in = (obs.clone(), noise.clone())
        side = torch.cuda.Stream(self.device)
        side.wait_stream(torch.cuda.current_stream(self.device))
        with torch.cuda.stream(side):
            for _ in range(3):  # warm-up outside the graph (cuDNN/cuBLAS set-up)
                self._policy_core(*self._graph_in)
        torch.cuda.current_stream(self.device).wait_stream(side)
        self._graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self._graph):
            self._graph_out = self._policy_core(*self._graph_in)

    def collect(
        self, env: VecEnv, obs: np.ndarray, generators: Sequence[torch.Generator]
    ) -> tuple[np.ndarray, list[list[FinishedEpisode]]]:
        """Fill the buffer from the cohort's vec env (W * N envs, seed-major); returns the
        next observations and each seed's finished episodes (env index within the seed)."""
        return drain(self.collect_steps(env, obs, generators))

    def collect_steps(
        self, env: VecEnv, obs: np.ndarray, generators: Sequence[torch.Generator]
    ) -> Generator[None, None, tuple[np.ndarray, list[list[FinishedEpisode]]]]:
        """`collect` one vector step at a time: yields after each step (a pipelined cohort
        runs another group's update between them) and returns what `collect` returns.

        With `side_stream`, every step's device work is queued on the collection's own
        stream, never across a yield, so the update interleaved with it stays on the
        default stream and the two only meet at the events below."""
        buf, n = self.buf, self.cfg.num_envs
        finished: list[list[FinishedEpisode]] = [[] for _ in self.seeds]
        host = self._host_obs.numpy()
        with self._on_side():  # this seed group's last update has written the parameters
            if self._updated is not None:
                torch.cuda.current_stream(self.device).wait_event(self._updated)
        for t in range(buf.obs.shape[1]):
            with self._on_side():
                host[:] = obs
                obs_t = self._host_obs.to(self.device, non_blocking=True)
                obs_t = obs_t.view(self.size, n, *OBS_SHAPE)
                actions, logprobs, values = self._policy_step(obs_t, generators)
                buf.obs[:, t] = obs_t
                buf.actions[:, t] = actions
                buf.logprobs[:, t] = logprobs
                buf.values[:, t] = values
                host_actions = actions.flatten().cpu().numpy()  # the step's one host sync
            obs, reward, terminated, truncated, infos = env.step(host_actions)
            buf.rewards[t] = reward
            done = np.logical_or(terminated, truncated)
            buf.dones[t] = done
            for i in np.flatnonzero(done):
                finished[i // n].append(FinishedEpisode(t, int(i % n), infos[i]["episode"]))
            yield
        with self._on_side():
            host[:] = obs
            last = self._host_obs.to(self.device, non_blocking=True)
            last = last.view(self.size, n, *OBS_SHAPE)
            buf.values[:, -1] = self._policy_step(last, generators)[2]
            if self._side is not None:  # the update reads the buffer after this point
                self._collected = torch.cuda.Event()
                self._collected.record(self._side)
        return obs, finished

    def _on_side(self) -> contextlib.AbstractContextManager[Any]:
        """The collection's stream (CUDA, `side_stream`), else nothing to switch."""
        return torch.cuda.stream(self._side) if self._side is not None else contextlib.nullcontext()

    # --- 2. GAE --------------------------------------------------------------------------
    def advantages(self) -> tuple[torch.Tensor, torch.Tensor]:
        """(advantages, returns), each (W, T * N) on the device, raw units."""
        w, t1, n = self.buf.values.shape
        values = self.buf.values.permute(1, 0, 2).reshape(t1, w * n).cpu().numpy()
        cfg = self.cfg
        adv = gae_numpy(self.buf.rewards, values, self.buf.dones, cfg.gamma, cfg.gae_lambda)
        adv_t = torch.from_numpy(adv).to(self.device).view(t1 - 1, w, n).permute(1, 0, 2)
        returns = adv_t + self.buf.values[:, :-1]
        return adv_t.reshape(w, -1), returns.reshape(w, -1)

    # --- 3. update -----------------------------------------------------------------------
    def update(self, rngs: Sequence[np.random.Generator]) -> list[dict[str, float]]:
        """PPO epochs over every seed's rollout at once; each seed's mean losses."""
        return drain(self.update_steps(rngs))

    def update_steps(
        self, rngs: Sequence[np.random.Generator]
    ) -> Generator[None, None, list[dict[str, float]]]:
        """`update` one minibatch at a time: yields after each minibatch's optimiser step
        is queued (a pipelined cohort steps another group's envs while the device runs
        it) and returns what `update` returns. Runs on the default stream."""
        cfg, w = self.cfg, self.size
        if self._collected is not None:  # the rollout was written on the collection's stream
            torch.cuda.current_stream(self.device).wait_event(self._collected)
            self._collected = None
        advantages, returns = self.advantages()
        advantages = (advantages - advantages.mean(1, keepdim=True)) / (
            advantages.std(1, keepdim=True) + 1e-8
        )
        obs = self.buf.obs.flatten(1, 2)
        actions, old_logprobs = self.buf.actions.flatten(1), self.buf.logprobs.flatten(1)
        batch = actions.shape[1]
        mb = batch // cfg.minibatches
        rows = torch.arange(w, device=self.device)[:, None]
        stats: list[torch.Tensor] = []
        for _ in range(cfg.epochs):
            orders = torch.from_numpy(np.stack([rng.permutation(batch) for rng in rngs]))
            # pinned, the copy does not wait for the minibatches queued before it (a
            # pageable one synchronises the stream: the other group's collection would idle)
            if self.device.type == "cuda":
                orders = orders.pin_memory().to(self.device, non_blocking=True)
            else:
                orders = orders.to(self.device)
            for start in range(0, batch, mb):
                idx = orders[:, start : start + mb]
                logprobs_all, value_pred = self._update_forward(obs[rows, idx])
                act = actions[rows, idx]
                logprobs = logprobs_all.gather(2, act[..., None])[..., 0]
                log_ratio = logprobs - old_logprobs[rows, idx]
                ratio = log_ratio.exp()
                adv = advantages[rows, idx]
                clipped = ratio.clamp(1.0 - cfg.clip, 1.0 + cfg.clip)
                policy_loss = -torch.min(adv * ratio, adv * clipped).mean(1)
                ret = returns[rows, idx]
                self.value_norm.update(ret)
                value_loss = ((value_pred - self.value_norm.normalize(ret)) ** 2).mean(1)
                entropy = -(logprobs_all.exp() * logprobs_all).sum(-1).mean(1)
                loss = policy_loss + cfg.vf_coef * value_loss - cfg.ent_coef * entropy
                self.optimizer.zero_grad(set_to_none=True)
                loss.sum().backward()
                self._clip_gradients()
                self.optimizer.step()
                with torch.no_grad():
                    kl = ((ratio - 1) - log_ratio).mean(1)
                    clip = ((ratio - 1).abs() > cfg.clip).float().mean(1)
                    stats.append(torch.stack([policy_loss, value_loss, entropy, kl, clip]))
                yield
        if self._side is not None:  # the next collection reads the new parameters after this
            self._updated = torch.cuda.Event()
            self._updated.record(torch.cuda.current_stream(self.device))
        means = torch.stack(stats).mean(0).cpu().numpy()  # the update's one sync: (5, W)
        return [{k: float(means[j, s]) for j, k in enumerate(STATS)} for s in range(w)]

    def _update_forward(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The update's forward, one seed at a time on its slice of the parameters: on an
        H200 the vmapped network (grouped convolutions) trained 17.9k samples/s where one
        network alone trained 21.3k (results/gpu/2026-11-26-h200/probe.log). Each slot's
        gradient is its own seed's (the other slices' gradients are exact zeros)."""
        outs = [
            functional_call(self.base, {k: p[s] for k, p in self.params.items()}, (obs[s],))
            for s in range(self.size)
        ]
        return torch.stack([o[0] for o in outs]), torch.stack([o[1] for o in outs])

    def _clip_gradients(self) -> None:
        """Each seed's global gradient norm clipped to `max_grad_norm`, as
        `torch.nn.utils.clip_grad_norm_` does for a run alone."""
        grads = [p.grad for p in self.params.values() if p.grad is not None]
        norms = torch.stack([torch.linalg.vector_norm(g.flatten(1), dim=1) for g in grads])
        total = torch.linalg.vector_norm(norms, dim=0)
        coef = (self.cfg.max_grad_norm / (total + 1e-6)).clamp(max=1.0)
        for g in grads:
            g.mul_(coef.view(-1, *[1] * (g.ndim - 1)))

    # --- per-seed slices ------------------------------------------------------------------
    def seed_state(self, slot: int) -> dict[str, Any]:
        """Seed `slot`'s model and Adam state in a run alone's format (`PPOAgent.state_dict`):
        an `ActorCritic` loads its "model", a run-alone Adam its "optimizer"."""
        model = {name: self.params[name][slot].detach().clone() for name in self.names}
        for name, tensor in zip(NORM_BUFFERS, self.value_norm.tensors(), strict=True):
            model[name] = tensor[slot].clone()
        full = self.optimizer.state_dict()
        state = {
            i: {
                k: (v[slot].clone() if k in ("exp_avg", "exp_avg_sq") else v.clone())
                for k, v in entry.items()
            }
            for i, entry in full["state"].items()
        }
        return {"model": model, "optimizer": {"state": state, "param_groups": full["param_groups"]}}

    def load_seed_states(self, states: Sequence[dict[str, Any]]) -> None:
        """Stack per-seed slices (`seed_state`, in slot order) into the cohort."""
        with torch.no_grad():
            for name in self.names:
                stacked = torch.stack([s["model"][name] for s in states]).to(self.device)
                if stacked.shape != self.params[name].shape:
                    raise ValueError(f"model.{name}: shape {tuple(stacked.shape)} in a slice")
                self.params[name].copy_(stacked)
            for name, tensor in zip(NORM_BUFFERS, self.value_norm.tensors(), strict=True):
                tensor.copy_(torch.stack([s["model"][name] for s in states]).to(self.device))
        first = states[0]["optimizer"]
        merged = {
            i: {
                k: (
                    torch.stack([s["optimizer"]["state"][i][k] for s in states])
                    if k in ("exp_avg", "exp_avg_sq")
                    else v
                )
                for k, v in entry.items()
            }
            for i, entry in first["state"].items()
        }
        self.optimizer.load_state_dict({"state": merged, "param_groups": first["param_groups"]})
        if self._side is not None:  # the next collection reads the loaded parameters
            self._updated = torch.cuda.Event()
            self._updated.record(torch.cuda.current_stream(self.device))
