"""`CohortPPO`: W seeds of one PPO run config trained as one batched model.

Why: one paper-network run leaves a GPU mostly idle (docs/agent.md, "On a GPU"). The W
networks' parameters are stacked (W, ...) and one forward serves every seed (`vmap` over
`functional_call` of a run alone's `ActorCritic`): W times fewer, larger kernels.

Nothing mixes seeds: each keeps its own loss (the total sums per-seed means), gradient
clip, Adam moments (Adam is elementwise), value normaliser, advantage normalisation, GAE,
generators and env seeds, derived from the seed as a run alone derives them. A seed's
numbers are fixed by (seed, W, device model, software, precision), not by its slot
(tests/test_agents_cohort.py); W = 1 is no cohort (the pipeline uses `Trainer`). Host and
device meet once per vector step (the actions) and once per rollout (for GAE on the host).

`collect_steps` and `update_steps` (drained by `collect` and `update`) yield per vector
step, resp. minibatch, so that a pipelined cohort (`envgen.agents.cohort_trainer`)
interleaves one group's update with another's collection (`interleave`), the collection
on its own CUDA stream (`side_stream`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import os
import warnings
from collections.abc import Generator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch.func import functional_call, stack_module_state, vmap

from envgen.agents import graphs
from envgen.agents.config import ModelConfig, PPOConfig, check_kernels
from envgen.agents.networks import OBS_SHAPE, ActorCritic
from envgen.agents.normalizer import EwmaNormalizer
from envgen.agents.ppo import LOSS_STATS, FinishedEpisode, VecEnv, gae, ppo_loss
from envgen.agents.seeding import derive_seed
from envgen.errors import ConfigError

NORM_BUFFERS = ("value_norm.mean_ewma", "value_norm.mean_sq_ewma", "value_norm.debias")


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


COMPILE_CACHE = Path(__file__).resolve().parents[2] / ".envgen" / "compile-cache"


def use_compile_cache() -> None:
    """Inductor's and Triton's caches in the repository's ignored .envgen/ (unless set):
    a second compile of the same code reads them, and they never enter git or a result."""
    os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", str(COMPILE_CACHE / "inductor"))
    os.environ.setdefault("TRITON_CACHE_DIR", str(COMPILE_CACHE / "triton"))


def drain(steps: Generator[None, None, Any]) -> Any:
    """The return value of a step generator (`collect_steps`, `update_steps`) run out."""
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
    """(update's result, collect's result): one group's update (a yield per minibatch)
    and another's collection (a yield per vector step) in this thread, in a fixed order:
    after the update's i-th of Y yields the collection has made floor(i * num_steps / Y)
    steps, so the two end together. Each runs its steps in its own order and they share
    no tensor, generator or env, so each computes what it computes alone."""
    yields, steps = cfg.epochs * cfg.minibatches, cfg.num_steps
    results: dict[str, Any] = {}

    def run(name: str, gen: Generator[None, None, Any]) -> Generator[None, None, None]:
        results[name] = yield from gen

    collecting = run("collect", collect) if collect is not None else iter(())
    made = 0
    for i, _ in enumerate(run("update", update), 1):
        made += sum(1 for _ in itertools.islice(collecting, i * steps // yields - made))
    for _ in collecting:  # the rest, and the collection's end (its last values)
        pass
    return results["update"], results.get("collect")


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
        kernels: str = "eager",
        compile_backend: str = "inductor",
    ):
        check_kernels(kernels)
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
        self.value_norm = EwmaNormalizer(cfg.value_norm_decay, self.size).to(device)
        self.kernels = kernels
        # "graph"/"compile" capture each minibatch on CUDA: Adam then keeps its step count
        # on the device (capturable), which rounds its bias correction differently
        self._capturable = kernels != "eager" and device.type == "cuda"
        self.optimizer = torch.optim.Adam(
            list(self.params.values()), lr=cfg.lr, capturable=self._capturable
        )
        # None: not yet captured; False: run op by op on purpose (`envgen.gpu.probe`)
        self._update_graph: torch.cuda.CUDAGraph | bool | None = None
        self._cuda = graphs.backend(device)  # None off CUDA: nothing is captured
        self._seed_loss = self._one_seed_loss
        if kernels == "compile":
            use_compile_cache()
            self._seed_loss = torch.compile(
                self._one_seed_loss, backend=compile_backend, fullgraph=True
            )
        self.buf = CohortRollout.empty(self.size, cfg, device)
        batch, mb = cfg.rollout_size, cfg.rollout_size // cfg.minibatches
        self._adv = torch.zeros((self.size, batch), device=device)
        self._ret = torch.zeros((self.size, batch), device=device)
        self._idx = torch.zeros((self.size, mb), dtype=torch.int64, device=device)
        self._rows = torch.arange(self.size, device=device)[:, None]
        self._mb_stats = torch.zeros((len(LOSS_STATS), self.size), device=device)
        self._forward = vmap(self._one_forward, in_dims=(0, 0))
        self._graph: torch.cuda.CUDAGraph | bool | None = None  # False: eager, capture failed
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

    def _one_seed_loss(
        self,
        params: dict[str, torch.Tensor],
        obs: torch.Tensor,
        act: torch.Tensor,
        old_logprobs: torch.Tensor,
        adv: torch.Tensor,
        target: torch.Tensor,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """One seed's forward on its slice of the stacked parameters and its PPO loss
        (`envgen.agents.ppo.ppo_loss`, a run alone's), with its statistics: what "compile"
        mode compiles, once for every seed."""
        logprobs_all, value_pred = functional_call(self.base, params, (obs,))
        return ppo_loss(logprobs_all, value_pred, act, old_logprobs, adv, target, self.cfg)

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
        launch, the same kernels and numbers) that reads the parameters where Adam updates
        them. A failed capture: "eager" warns and steps op by op; "graph" and "compile"
        raise (`graphs.failure`): a run under their name never steps uncaptured."""
        w, n = obs.shape[:2]
        noise = torch.stack(
            [
                torch.rand((n, self.base.cfg.num_actions), generator=g, device=self.device)
                for g in generators
            ]
        )
        if self._cuda is None or self._graph is False:
            return self._policy_core(obs, noise)
        if self._graph is None:
            try:
                self._capture_policy(obs, noise)
            except Exception as exc:  # noqa: BLE001 - the mode decides (docstring)
                if self.kernels != "eager":
                    raise ConfigError(
                        "cohort_kernels", graphs.failure(self.kernels, "policy step's capture", exc)
                    ) from exc
                if not isinstance(exc, RuntimeError):  # eager falls back on these only
                    raise
                warnings.warn(f"cohort policy step runs eagerly: {exc}", stacklevel=2)
                self._graph = False
                return self._policy_core(obs, noise)
        self._graph_in[0].copy_(obs)
        self._graph_in[1].copy_(noise)
        self._graph.replay()
        return self._graph_out

    def _capture_policy(self, obs: torch.Tensor, noise: torch.Tensor) -> None:
        assert self._cuda is not None
        self._graph_in = (obs.clone(), noise.clone())
        graphs.warm_up(self._cuda, lambda: self._policy_core(*self._graph_in))
        self._graph, self._graph_out = graphs.record(
            self._cuda, lambda: self._policy_core(*self._graph_in)
        )

    def collect(
        self, env: VecEnv, obs: np.ndarray, generators: Sequence[torch.Generator]
    ) -> tuple[np.ndarray, list[list[FinishedEpisode]]]:
        """Fill the buffer from the cohort's vec env (W * N envs, seed-major): the next
        observations and each seed's finished episodes (env index within the seed)."""
        return drain(self.collect_steps(env, obs, generators))

    def collect_steps(
        self, env: VecEnv, obs: np.ndarray, generators: Sequence[torch.Generator]
    ) -> Generator[None, None, tuple[np.ndarray, list[list[FinishedEpisode]]]]:
        """`collect`, yielding after each vector step (another group's update runs between
        them). With `side_stream` each step's device work is queued on the collection's
        stream, never across a yield: the two meet only at the events below."""
        buf, n = self.buf, self.cfg.num_envs
        finished: list[list[FinishedEpisode]] = [[] for _ in self.seeds]
        host = self._host_obs.numpy()
        step = getattr(env, "step_view", env.step)  # copied once, into `host`
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
            obs, reward, terminated, truncated, infos = step(host_actions)
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
        return obs.copy(), finished  # a step view lives until the env's next step

    def _on_side(self) -> contextlib.AbstractContextManager[Any]:
        """The collection's stream (CUDA, `side_stream`), else nothing to switch."""
        return torch.cuda.stream(self._side) if self._side is not None else contextlib.nullcontext()

    # --- 2. GAE --------------------------------------------------------------------------
    def advantages(self) -> tuple[torch.Tensor, torch.Tensor]:
        """(advantages, returns), each (W, T * N) on the device, raw units."""
        w, t1, n = self.buf.values.shape
        values = self.buf.values.permute(1, 0, 2).reshape(t1, w * n).cpu()
        rewards, dones = torch.from_numpy(self.buf.rewards), torch.from_numpy(self.buf.dones)
        adv = gae(rewards, values, dones, self.cfg.gamma, self.cfg.gae_lambda)  # on the host
        adv_t = adv.to(self.device).view(t1 - 1, w, n).permute(1, 0, 2)
        returns = adv_t + self.buf.values[:, :-1]
        return adv_t.reshape(w, -1), returns.reshape(w, -1)

    # --- 3. update -----------------------------------------------------------------------
    def update(self, rngs: Sequence[np.random.Generator]) -> list[dict[str, float]]:
        """PPO epochs over every seed's rollout at once; each seed's mean losses."""
        return drain(self.update_steps(rngs))

    def update_steps(
        self, rngs: Sequence[np.random.Generator]
    ) -> Generator[None, None, list[dict[str, float]]]:
        """`update`, yielding after each minibatch's optimiser step is queued (another
        group's envs step while the device runs it); on the default stream. A minibatch
        reads only fixed-address tensors (buffer, `_adv`, `_ret`, indices `_idx`) and
        writes `_mb_stats`, so that it replays as one CUDA graph (`_run_minibatch`); the
        update syncs with the host twice, for GAE's values and for its mean losses."""
        cfg = self.cfg
        if self._collected is not None:  # the rollout was written on the collection's stream
            torch.cuda.current_stream(self.device).wait_event(self._collected)
            self._collected = None
        advantages, returns = self.advantages()
        for s, seed_adv in enumerate(advantages):  # each seed's as a run alone normalises
            self._adv[s] = (seed_adv - seed_adv.mean()) / (seed_adv.std() + 1e-8)
        self._ret.copy_(returns)
        batch = self._adv.shape[1]
        mb = batch // cfg.minibatches
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
                self._idx.copy_(orders[:, start : start + mb])
                self._run_minibatch()
                stats.append(self._mb_stats.clone())
                yield
        if self._side is not None:  # the next collection reads the new parameters after this
            self._updated = torch.cuda.Event()
            self._updated.record(torch.cuda.current_stream(self.device))
        per_minibatch = torch.stack(stats).cpu().numpy()  # the update's one sync: (E*M, 5, W)
        # each mean over a list of floats, as `ppo_update` takes a run alone's
        return [
            {k: float(np.mean(per_minibatch[:, j, s].tolist())) for j, k in enumerate(LOSS_STATS)}
            for s in range(self.size)
        ]

    def _run_minibatch(self) -> None:
        """One minibatch: replayed from its CUDA graph ("graph", "compile" on CUDA; captured
        at the first call, a failure raises), else op by op (off CUDA, eager kernels, or
        `_update_graph` set False on purpose)."""
        if self._update_graph is None and self.kernels != "eager" and self._cuda is not None:
            self._capture_update()
        if self.update_captured:
            self._update_graph.replay()
        else:
            self._training_step()

    def _minibatch(self) -> None:
        """Forward, losses, backward, per-seed clipping and Adam on minibatch `_idx`; the
        statistics into `_mb_stats`."""
        rows, idx = self._rows, self._idx
        obs = self.buf.obs.flatten(1, 2)
        act = self.buf.actions.flatten(1)[rows, idx]
        old_logprobs = self.buf.logprobs.flatten(1)[rows, idx]
        adv, ret = self._adv[rows, idx], self._ret[rows, idx]
        self.value_norm.update(ret)
        target = self.value_norm.normalize(ret)
        outs = [
            self._seed_loss(
                {k: p[s] for k, p in self.params.items()},
                obs[s, idx[s]],
                act[s],
                old_logprobs[s],
                adv[s],
                target[s],
            )
            for s in range(self.size)
        ]
        loss = torch.stack([o[0] for o in outs])
        seed_stats = torch.stack([o[1] for o in outs], dim=1)
        loss.sum().backward()
        self._clip_gradients()
        self.optimizer.step()
        with torch.no_grad():
            self._mb_stats.copy_(seed_stats)

    def _training_step(self) -> None:
        self.optimizer.zero_grad(set_to_none=True)
        self._minibatch()

    def _capture_update(self) -> None:
        """Capture `_minibatch` as one CUDA graph (PyTorch's "whole network capture":
        warm-up on a side stream, gradients unset so that backward allocates them in the
        graph's pool, Adam capturable). Model, Adam and normaliser are restored after the
        warm-up's minibatches (and compilation), and on a failure, which raises."""
        assert self._cuda is not None
        saved = self._training_state()
        try:
            graphs.warm_up(self._cuda, self._training_step)
            self._restore_training_state(saved)
            self.optimizer.zero_grad(set_to_none=True)
            graph, _ = graphs.record(self._cuda, self._minibatch)
        except Exception as exc:  # noqa: BLE001 - one clear line, whatever failed
            with contextlib.suppress(Exception):  # the failure is the error to report
                self._restore_training_state(saved)
            what = "update's " + (
                "compilation or capture" if self.kernels == "compile" else "capture"
            )
            raise ConfigError("cohort_kernels", graphs.failure(self.kernels, what, exc)) from exc
        self._update_graph = graph

    @property
    def update_captured(self) -> bool:
        """Whether the update replays a CUDA graph (`envgen.gpu.probe`'s "captured")."""
        return self._update_graph is not None and self._update_graph is not False

    def close(self) -> None:
        """Free the CUDA graphs (and their memory pools) now: the cohort holds itself in
        reference cycles (its vmapped forward and loss are bound methods), so dropping it
        frees nothing until the cyclic collector runs, perhaps while another cohort
        captures. Idempotent; the cohort is not used after it."""
        for name in ("_graph", "_update_graph"):
            graph = getattr(self, name)
            if graph is not None and graph is not False:
                graph.reset()
            setattr(self, name, None)
        self._graph_in = self._graph_out = None
        # the cycles themselves: the bound methods held by the instance
        self._forward = self._seed_loss = None  # type: ignore[assignment]

    def _written(self) -> list[torch.Tensor]:
        """Everything a minibatch writes: parameters, normaliser, Adam's state (in the
        order Adam created it)."""
        tensors = [*self.params.values(), *self.value_norm.stats()]
        for state in self.optimizer.state.values():
            tensors += [v for v in state.values() if isinstance(v, torch.Tensor)]
        return tensors

    def _training_state(self) -> list[torch.Tensor]:
        return [t.detach().clone() for t in self._written()]

    def _restore_training_state(self, saved: list[torch.Tensor]) -> None:
        """Write `_training_state`'s copies back in place (the graph keeps the addresses).
        Adam's state that the warm-up created (a first update) is kept with zeroed
        moments and step: a fresh Adam's."""
        tensors = self._written()
        if len(tensors) < len(saved):  # Adam's state only grows: a copy of another graph
            raise RuntimeError(f"{len(saved)} saved training tensors for {len(tensors)}")
        with torch.no_grad():
            for tensor, copy in zip(tensors, saved, strict=False):
                tensor.copy_(copy)
            for tensor in tensors[len(saved) :]:
                tensor.zero_()

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
        for name, tensor in zip(NORM_BUFFERS, self.value_norm.stats(), strict=True):
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
            for name, tensor in zip(NORM_BUFFERS, self.value_norm.stats(), strict=True):
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
        # the group's capturable flag is this cohort's kernel mode's, not the slice's
        groups = [{**g, "capturable": self._capturable} for g in first["param_groups"]]
        self.optimizer.load_state_dict({"state": merged, "param_groups": groups})
        self._update_graph = None  # Adam's state tensors are new: capture again
        if self._side is not None:  # the next collection reads the loaded parameters
            self._updated = torch.cuda.Event()
            self._updated.record(torch.cuda.current_stream(self.device))
