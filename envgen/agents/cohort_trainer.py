"""`CohortTrainer`: W runs of one config, one seed each, trained as a cohort
(`envgen.agents.cohort`), each writing its own run directory as a run alone would.

Per seed it keeps what a `Trainer` keeps: logs, counters and a checkpoint slice (plus
`cohort`: W and the step). Slices are written one seed after another, each seed keeping
its previous one (`PREVIOUS`) until all new ones are in, so a kill leaves a step every
seed has; `resume` takes the newest. A slice resumes in any slot of a cohort of the same
W. The cohort plays one mixture from start to end (`original_only`).

Pipelined (`groups=2`): two groups of W/2 seeds, each with its own `CohortPPO`, vec env
and policy-step graph and stream. While one group updates on the GPU, the other collects
on the CPU's env workers (`cohort.interleave`, fixed order). Each seed still alternates
collect and update with its own parameters; its numbers are a cohort of W/2's, hence
`RunConfig.cohort_groups` in the run's identity. Group 0 does not collect ahead before a
checkpoint or the end of `train_until`: checkpoints hold every seed at a rollout boundary.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from envgen.agents.checkpoint import save_checkpoint
from envgen.agents.cohort import CohortPPO, drain, interleave
from envgen.agents.config import ModelConfig, PPOConfig, check_groups, check_kernels
from envgen.agents.runlog import episode_record
from envgen.agents.seeding import derive_seed
from envgen.agents.trainer import RolloutLoop
from envgen.envs.mixture import env_seed
from envgen.envs.plain import mixture_to_plain
from envgen.envs.vector import CrafterVecEnv, default_num_workers, usable_cores
from envgen.errors import ConfigError
from envgen.store.manifest import CHECKPOINT_DIR, LATEST_CHECKPOINT, PREVIOUS_CHECKPOINT

PREVIOUS = PREVIOUS_CHECKPOINT.name
# (configs, seeds of every env, envs per seed, weights) -> vec env of W * N envs
CohortEnvFactory = Callable[[Sequence[Any], Sequence[int], int, Sequence[float] | None], Any]


def crafter_cohort_env_factory(num_workers: int | None = None) -> CohortEnvFactory:
    """`CrafterVecEnv` over every seed's envs, seed-major, at most (cores - 1) workers
    unless `num_workers` says (the parent drives the GPU); idle workers generate the next
    worlds (they idle through every policy step; no number changes)."""

    def make(configs, env_seeds, group_size, weights):
        n = len(env_seeds)
        workers = num_workers or max(1, min(default_num_workers(n), usable_cores() - 1))
        return CrafterVecEnv(
            configs,
            n,
            0,
            weights,
            workers,
            env_seeds=env_seeds,
            group_size=group_size,
            prepare_when_idle=True,
        )

    return make


@dataclasses.dataclass(eq=False)
class _Group:
    """One seed group of a cohort: its slots (indices into the cohort's seeds), its
    batched model, its vec env and observations; `ahead`: it has collected the next
    rollout, not yet updated on (pipelined only)."""

    slots: range
    agent: CohortPPO
    env: Any = None
    obs: np.ndarray | None = None
    ahead: bool = False
    counts: list[int] = dataclasses.field(default_factory=list)  # episodes per seed, last rollout


class CohortTrainer(RolloutLoop):
    """W seeds of one (model, PPO) config; `run_dirs[k]` is seed `seeds[k]`'s directory;
    `groups` > 1 pipelines the cohort (module docstring)."""

    _checkpoint_names = (LATEST_CHECKPOINT.name, PREVIOUS)
    _config_fix = "start over"
    _restart = "start the cohort over"

    def __init__(
        self,
        model_cfg: ModelConfig,
        ppo_cfg: PPOConfig,
        seeds: Sequence[int],
        run_dirs: Sequence[Path | str],
        device: str | torch.device = "cpu",
        *,
        env_factory: CohortEnvFactory | None = None,
        episode_record: Callable[..., dict[str, Any]] = episode_record,
        progress: bool = False,
        checkpoint_seconds: float = 0.0,
        groups: int = 1,
        kernels: str = "eager",
    ):
        if len(seeds) != len(run_dirs) or len(set(seeds)) != len(seeds):
            raise ConfigError("seeds", "a cohort needs distinct seeds, one run directory each")
        check_groups(len(seeds), groups)
        check_kernels(kernels)
        self.kernels, self.groups, self.size = kernels, groups, len(seeds)
        per = self.size // groups
        self._groups = [
            _Group(
                range(g * per, (g + 1) * per),
                CohortPPO(
                    model_cfg,
                    ppo_cfg,
                    seeds[g * per : (g + 1) * per],
                    torch.device(device),
                    side_stream=groups > 1,
                    kernels=kernels,
                ),
            )
            for g in range(groups)
        ]
        args = episode_record, progress, checkpoint_seconds
        super().__init__(model_cfg, ppo_cfg, seeds, run_dirs, device, *args)
        self.env_factory = env_factory or crafter_cohort_env_factory()
        self._saved_env: list[dict[str, Any]] | None = None

    @property
    def agent(self) -> CohortPPO:
        """The batched model of an unpipelined cohort (`groups` 1)."""
        if self.groups != 1:
            raise AttributeError("a pipelined cohort has one CohortPPO per group (_groups)")
        return self._groups[0].agent

    @property
    def env_workers(self) -> int | None:
        """Worker processes of each group's vec env; None while no env is open."""
        env = self._groups[0].env
        return None if env is None else getattr(env, "num_workers", None)

    # --- training --------------------------------------------------------------------
    def train_until(
        self,
        step: int,
        configs: Sequence[Any],
        weights: Sequence[float] | None = None,
        phase: str = "crafter",
    ) -> None:
        """Train every seed until its global step reaches `step` (whole rollouts)."""
        mixture = (tuple(configs), tuple(weights) if weights is not None else None)
        if self.mixture is not None and mixture != self.mixture:
            raise ConfigError(
                "method", "a cohort plays one mixture from start to end (original_only)"
            )
        self.mixture = mixture
        self._train_rollouts(step, phase)

    def _rollout(self, phase: str, until: int) -> list[dict[str, Any]]:
        # pipelined: group 0 collects the next rollout during the last group's update unless
        # this call ends or a checkpoint follows (a checkpoint holds every seed at a boundary)
        ahead = (
            self.groups > 1
            and self.global_step + self.ppo_cfg.rollout_size < until
            and (self.counters.rollouts + 1) % self.ppo_cfg.checkpoint_rollouts != 0
            and not self._clock_due()
        )
        if self._groups[0].env is None:
            self._open_envs()
        start_step, first = self.global_step, self._groups[0]
        losses: list[dict[str, float]] = [{} for _ in self.seeds]
        counts = [0] * self.size
        if self.groups == 1:
            first.obs, finished = first.agent.collect(
                first.env, first.obs, self._rngs(first, self.action_rngs)
            )
            losses = first.agent.update(self._rngs(first, self.shuffle_rngs))
            for k, seed_losses in zip(first.slots, losses, strict=True):
                self._check_finite(k, seed_losses)
            self._write_episodes(first, finished, start_step, phase)
            counts = first.counts
        else:
            if not first.ahead:
                self._collected(first, drain(self._collect(first)), start_step, phase)
            for i, group in enumerate(self._groups):
                for k, count in zip(group.slots, group.counts, strict=True):
                    counts[k] = count  # before group 0 collects ahead
                last = i + 1 == self.groups
                following = first if last and ahead else None if last else self._groups[i + 1]
                update = group.agent.update_steps(self._rngs(group, self.shuffle_rngs))
                collect = self._collect(following) if following is not None else None
                group_losses, collected = interleave(update, collect, self.ppo_cfg)
                if following is not None:
                    at = start_step + (self.ppo_cfg.rollout_size if last else 0)
                    self._collected(following, collected, at, phase)
                for k, seed_losses in zip(group.slots, group_losses, strict=True):
                    self._check_finite(k, seed_losses)
                    losses[k] = seed_losses
        first.ahead = ahead
        self.counters.global_step += self.ppo_cfg.rollout_size
        self.counters.rollouts += 1
        return [
            {"episodes": counts[k], **{f"losses/{name}": v for name, v in losses[k].items()}}
            for k in range(self.size)
        ]

    def _checkpoint_due(self) -> bool:
        return not self._groups[0].ahead and super()._checkpoint_due()

    def _collect(self, group: _Group):
        return group.agent.collect_steps(group.env, group.obs, self._rngs(group, self.action_rngs))

    def _collected(self, group: _Group, result: Any, start_step: int, phase: str) -> None:
        """A pipelined group's collection ended: its observations, its episodes logged."""
        group.obs, finished = result
        self._write_episodes(group, finished, start_step, phase)

    def _write_episodes(
        self, group: _Group, finished: list[list[Any]], start_step: int, phase: str
    ) -> None:
        group.counts = [len(episodes) for episodes in finished]
        for k, episodes in zip(group.slots, finished, strict=True):
            self._log_episodes(k, episodes, start_step, phase)

    @staticmethod
    def _rngs(group: _Group, rngs: Sequence[Any]) -> list[Any]:
        return [rngs[k] for k in group.slots]

    def _open_envs(self) -> None:
        assert self.mixture is not None
        configs, weights = self.mixture
        n = self.ppo_cfg.num_envs
        saved, self._saved_env = self._saved_env, None
        for group in self._groups:
            seeds = [
                env_seed(derive_seed(self.seeds[k], "env"), i)
                for k in group.slots
                for i in range(n)
            ]
            group.env = self.env_factory(configs, seeds, n, weights)
            group.ahead = False
            if saved is None:
                group.obs = group.env.reset()
                continue
            with self._restoring_env_state():
                group.env.set_state(_merge_env_states([saved[k] for k in group.slots], n))
            group.obs = group.env.last_obs

    # --- checkpoints -------------------------------------------------------------------
    def checkpoint(self) -> None:
        """One slice per seed (module docstring): previous kept until all are written."""
        if self._groups[0].ahead:  # group 0's next rollout is in no checkpoint's format
            raise RuntimeError("a pipelined cohort checkpoints at a rollout boundary only")
        self._count_checkpoint()
        env_states = self._saved_env  # resumed, not yet stepped: what was saved
        if self._groups[0].env is not None:
            env_states = [
                state
                for group in self._groups
                for state in _split_env_state(group.env.get_state(), self.ppo_cfg.num_envs)
            ]
        for k in range(self.size):
            directory = self.run_dirs[k] / CHECKPOINT_DIR
            latest = directory / LATEST_CHECKPOINT.name
            if latest.exists():
                os.replace(latest, directory / PREVIOUS)
            save_checkpoint(directory, self._seed_slice(k, env_states))
        for k in range(self.size):
            (self.run_dirs[k] / CHECKPOINT_DIR / PREVIOUS).unlink(missing_ok=True)

    def _seed_slice(self, k: int, env_states: list[dict[str, Any]] | None) -> dict[str, Any]:
        group = self._groups[k // (self.size // self.groups)]
        cohort = {"size": self.size, "step": self.global_step}
        if self.groups > 1:  # left out at 1: unpipelined slices carry no grouping
            cohort["groups"] = self.groups
        if self.kernels != "eager":  # left out when eager, as in the run's hash
            cohort["kernels"] = self.kernels
        env = None
        if env_states is not None and self.mixture is not None:
            env = (mixture_to_plain(self.mixture), env_states[k])
        return self._slice(k, group.agent.seed_state(k - group.slots.start), env, cohort=cohort)

    def _fix(self, path: Path) -> str:
        return f"remove every seed's {CHECKPOINT_DIR} to start the cohort from step 0"

    def _load_learners(self, states: list[dict[str, Any]]) -> None:
        for group in self._groups:
            group.agent.load_seed_states([states[k] for k in group.slots])

    def _resume_envs(self, envs: list[tuple[Any, dict[str, Any]] | None]) -> None:
        if all(e is not None for e in envs):
            self.mixture = envs[0][0]
            self._saved_env = [e[1] for e in envs]

    def _slice_step(self, path: Path, cohort: Any) -> int:
        run_dir = path.parent.parent
        if not isinstance(cohort, dict) or type(cohort.get("step")) is not int:
            raise ConfigError(
                "cohort",
                f"{path} was not written by a cohort; resume it as a run alone, or remove it",
            )
        if cohort.get("size") != self.size:
            raise ConfigError(
                "cohort",
                f"{run_dir} was trained in a cohort of {cohort.get('size')}, not "
                f"{self.size}: a seed's numbers depend on W; resume it in a cohort of "
                "that size",
            )
        if cohort.get("groups", 1) != self.groups:
            raise ConfigError(
                "cohort_groups",
                f"{run_dir} was trained in a cohort of {self.size} in "
                f"{cohort.get('groups', 1)} group(s), not {self.groups}: a seed's numbers "
                "depend on its group's size; resume it with that grouping",
            )
        if cohort.get("kernels", "eager") != self.kernels:
            raise ConfigError(
                "cohort_kernels",
                f"{run_dir} was trained with {cohort.get('kernels', 'eager')!r} kernels, "
                f"not {self.kernels!r}: each mode rounds differently; resume it in its "
                "own mode",
            )
        return cohort["step"]

    def close_env(self) -> None:
        for group in self._groups:
            if group.env is not None:
                group.env.close()
            group.env, group.obs, group.ahead = None, None, False

    def close(self) -> None:
        """Close the envs and logs, and free each group's CUDA graphs (`CohortPPO.close`)."""
        super().close()
        for group in self._groups:
            group.agent.close()


def _split_env_state(state: dict[str, Any], n: int) -> list[dict[str, Any]]:
    """The vec env's state (`CrafterVecEnv.get_state`) as one run-alone state per seed."""
    merged = {i: env for block in state["blocks"] for i, env in block.items()}
    total = len(state["config_indices"])
    return [
        {
            "configs": state["configs"],
            "config_indices": state["config_indices"][s : s + n],
            "blocks": [{i - s: merged[i] for i in range(s, s + n)}],
            "obs": state["obs"][s : s + n].copy(),
        }
        for s in range(0, total, n)
    ]


def _merge_env_states(states: Sequence[dict[str, Any]], n: int) -> dict[str, Any]:
    """Inverse of `_split_env_state`: seed k's envs become envs k*n .. k*n+n-1."""
    blocks: dict[int, Any] = {}
    for k, state in enumerate(states):
        local = {i: env for block in state["blocks"] for i, env in block.items()}
        if set(local) != set(range(n)):
            raise ValueError(f"env states: expected envs 0..{n - 1} per seed")
        blocks.update({k * n + i: v for i, v in local.items()})
    return {
        "configs": states[0]["configs"],
        "config_indices": [i for s in states for i in s["config_indices"]],
        "blocks": [blocks],
        "obs": np.concatenate([s["obs"] for s in states]),
    }
