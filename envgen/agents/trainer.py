"""`Trainer`: an agent (PPO or AD) on a mixture of level configs, resumable, phase by phase.

The game enters only through the vec-env factory and the episode-log functions
(`envgen.games` holds them per game); Crafter's are the defaults.

The EnvGen loop calls `train(steps, configs)` (or `train_until(step, configs)`) once per
phase with a new mixture; optimiser, normaliser, RNG streams and the vec env carry over
(the mixture switches with `set_mixture`). Steps are global env steps over all envs,
counted in whole rollouts: a call stops at the first rollout boundary at or past its
target, and the next call's target is absolute, so overshoot never accumulates.

Resume semantics (docs/agent.md, "Reproducibility and resume"): a checkpoint is written every
`PPOConfig.checkpoint_every` steps (whole rollouts), at the first rollout boundary
`checkpoint_seconds` after the last one when that is set (wall-clock jobs that get
killed: `envgen gpu run`), and on `checkpoint()`. Writing one changes no number. It holds the
vec env's state too (every env mid-episode, `get_state`), and the env keeps running:
checkpoints never end an episode. A resumed run rebuilds the env from that state, so a
run killed and resumed equals an uninterrupted one. Only a mixture switch (a phase
boundary, part of the method) ends running episodes; they are counted
(`Counters.episodes_cut`, and `episodes_cut` in the next metrics line).
"""

from __future__ import annotations

import collections
import dataclasses
import math
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import torch
from tqdm import tqdm

from envgen.agents import ad, ppo
from envgen.agents.checkpoint import (
    check_written_with,
    load_checkpoint,
    restore_streams,
    save_checkpoint,
    seed_state,
)
from envgen.agents.checkpoint_counters import checked_counters
from envgen.agents.config import ModelConfig, PPOConfig
from envgen.agents.runlog import JsonlLog, episode_record
from envgen.agents.seeding import derive_seed
from envgen.envs.plain import mixture_from_plain, mixture_to_plain
from envgen.envs.vector import CrafterVecEnv
from envgen.errors import ConfigError, EnvGenError
from envgen.scoring import summarize
from envgen.store.manifest import CHECKPOINT_DIR, LATEST_CHECKPOINT
from envgen.store.run_dir import RunDir

# (configs, num_envs, seed, weights) -> vec env
EnvFactory = Callable[[Sequence[Any], int, int, Sequence[float] | None], ppo.VecEnv]
# (vec env's episode info, global step, phase) -> the episode log's line
EpisodeRecord = Callable[[Mapping[str, Any], int, str], dict[str, Any]]
# logged episodes -> summary with the game's "score" (percent)
Summarize = Callable[[Sequence[Mapping[str, Any]]], dict[str, Any]]


# --- agent interface: what the trainer needs of an algorithm -------------------------
class Agent(Protocol):
    """Model, optimisers and buffers of one algorithm (`ppo.PPOAgent`, `ad.ADAgent`)."""

    model: torch.nn.Module

    def collect(
        self, env: ppo.VecEnv, obs: np.ndarray, generator: torch.Generator
    ) -> tuple[np.ndarray, list[ppo.FinishedEpisode]]: ...

    def update(self, rng: np.random.Generator) -> dict[str, float]: ...

    def episodes_reset(self) -> None: ...

    def state_dict(self) -> dict[str, Any]: ...

    def load_state_dict(self, state: dict[str, Any]) -> None: ...


# Explicit registry: agent name (`config.AGENTS`) -> class, cls(model_cfg, ppo_cfg, device).
AGENTS: dict[str, Callable[[ModelConfig, PPOConfig, torch.device], Agent]] = {
    "ppo": ppo.PPOAgent,
    "ad": ad.ADAgent,
}


def crafter_vec_env_factory(num_workers: int | None = None) -> EnvFactory:
    """The default factory: `envgen.envs.vector.CrafterVecEnv` over `num_workers` processes."""

    def make(configs, num_envs, seed, weights):
        return CrafterVecEnv(configs, num_envs, seed, weights=weights, num_workers=num_workers)

    return make


@dataclasses.dataclass
class Counters:
    """Progress that checkpoints carry."""

    global_step: int = 0
    """Env steps taken over all envs."""
    rollouts: int = 0
    """Rollouts (PPO updates) done."""
    checkpoints: int = 0
    """Checkpoints written (a count only: the run's numbers do not depend on it)."""
    checkpoint_step: int = 0
    """Global step of the latest checkpoint."""
    episodes_cut: int = 0
    """Running episodes ended unlogged by mixture switches (phase boundaries)."""


class RolloutLoop:
    """The training loop a run alone (`Trainer`) and a cohort (`envgen.agents.cohort_trainer`)
    share: whole rollouts until a global step, one metrics line per rollout and run, a
    checkpoint every `checkpoint_rollouts` rollouts or `checkpoint_seconds` of wall clock.
    A subclass says what one rollout is (`_rollout`: each run's line) and where its lines
    go (`metrics`, one log per run)."""

    ppo_cfg: PPOConfig
    counters: Counters
    checkpoint_seconds: float
    progress: bool
    metrics_logs: list[JsonlLog]
    _checkpointed_at: float

    @property
    def global_step(self) -> int:
        return self.counters.global_step

    def _train_rollouts(self, step: int, phase: str) -> None:
        runs = len(self.metrics_logs)
        bar = tqdm(
            total=max(step - self.global_step, 0) * runs,
            desc=phase if runs == 1 else f"{phase} x{runs}",
            unit="step",
            disable=not self.progress,
            dynamic_ncols=True,
        )
        while self.global_step < step:
            start = time.perf_counter()
            lines = self._rollout(phase, step)
            sps = self.ppo_cfg.rollout_size / (time.perf_counter() - start)
            for log, line in zip(self.metrics_logs, lines, strict=True):
                log.write({"step": self.global_step, "phase": phase, **line, "time/sps": sps})
            bar.update(self.ppo_cfg.rollout_size * runs)
            bar.set_postfix(sps=f"{sps * runs:.0f}", **self._postfix())
            if self._checkpoint_due():
                self.checkpoint()
        bar.close()

    def _rollout(self, phase: str, until: int) -> list[dict[str, Any]]:
        """One rollout and update of every run; each run's metrics line (without step,
        phase and speed)."""
        raise NotImplementedError

    def _postfix(self) -> dict[str, str]:
        return {}

    def _clock_due(self) -> bool:
        return bool(
            self.checkpoint_seconds
            and time.monotonic() - self._checkpointed_at >= self.checkpoint_seconds
        )

    def _checkpoint_due(self) -> bool:
        return self.counters.rollouts % self.ppo_cfg.checkpoint_rollouts == 0 or self._clock_due()

    def checkpoint(self) -> None:
        raise NotImplementedError


class Trainer(RolloutLoop):
    """Agent trainer writing `run_dir/{episodes,metrics}.jsonl` and `run_dir/checkpoints/`."""

    def __init__(
        self,
        model_cfg: ModelConfig,
        ppo_cfg: PPOConfig,
        seed: int,
        run_dir: Path | str,
        device: str | torch.device = "cpu",
        *,
        env_factory: EnvFactory | None = None,
        episode_record: EpisodeRecord = episode_record,
        summarize: Summarize = summarize,
        progress: bool = False,
        agent: str = "ppo",
        checkpoint_seconds: float = 0.0,
    ):
        if agent not in AGENTS:
            raise ConfigError("agent", f"{agent!r}; allowed: {', '.join(AGENTS)}")
        self.model_cfg, self.ppo_cfg, self.seed, self.agent_name = model_cfg, ppo_cfg, seed, agent
        self.run_dir = Path(run_dir)
        self.device = torch.device(device)
        self.env_factory = env_factory or crafter_vec_env_factory()
        self.episode_record = episode_record
        self.summarize = summarize
        self.progress = progress
        self.checkpoint_seconds = checkpoint_seconds
        self._checkpointed_at = time.monotonic()

        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(derive_seed(seed, "model"))
            self.agent = AGENTS[agent](model_cfg, ppo_cfg, self.device)
        self.model = self.agent.model
        self.action_rng = torch.Generator(device=self.device)
        self.action_rng.manual_seed(derive_seed(seed, "actions"))
        self.shuffle_rng = np.random.default_rng(derive_seed(seed, "minibatches"))
        self.counters = Counters()

        self.env: ppo.VecEnv | None = None
        self.obs: np.ndarray | None = None
        self.mixture: tuple[tuple[Any, ...], tuple[float, ...] | None] | None = None
        self._saved_env: tuple[Any, dict[str, Any]] | None = None  # (mixture, state)
        self._cut = 0  # episodes cut since the last metrics line
        self.episodes = JsonlLog(RunDir(self.run_dir).episodes)
        self.metrics = JsonlLog(RunDir(self.run_dir).metrics)
        self.metrics_logs = [self.metrics]
        self.recent: collections.deque[dict[str, Any]] = collections.deque(maxlen=100)
        self._finished: list[dict[str, Any]] = []

    # --- training ------------------------------------------------------------------
    def train(
        self,
        steps: int,
        configs: Sequence[Any],
        weights: Sequence[float] | None = None,
        phase: str = "crafter",
    ) -> dict[str, Any]:
        """Train about `steps` more env steps (whole rollouts); see `train_until`."""
        return self.train_until(self.global_step + steps, configs, weights, phase)

    def train_until(
        self,
        step: int,
        configs: Sequence[Any],
        weights: Sequence[float] | None = None,
        phase: str = "crafter",
    ) -> dict[str, Any]:
        """Train on the mixture until the global step reaches `step` (rollout granularity).

        Idempotent under resume: a call whose target is already reached returns at once.
        Returns the summary (the `summarize` given, Crafter's by default) of the episodes
        it finished, or {"episodes": 0} when none finished.
        """
        if not configs:
            raise ConfigError("configs", "give at least one environment config to train on")
        mixture = (tuple(configs), tuple(weights) if weights is not None else None)
        if self.env is not None and mixture != self.mixture:
            self._switch(mixture)
        self.mixture = mixture
        self._finished = []
        self._train_rollouts(step, phase)
        finished, self._finished = self._finished, []
        return self.summarize(finished) if finished else {"episodes": 0}

    def _rollout(self, phase: str, until: int) -> list[dict[str, Any]]:
        records, losses = self._rollout_and_update(phase)
        self._finished += records
        line = {
            "episodes": len(records),
            **({"episodes_cut": self._cut} if self._cut else {}),
            **{f"losses/{k}": v for k, v in losses.items()},
        }
        self._cut = 0
        return [line]

    def _postfix(self) -> dict[str, str]:
        return {"score": self._running_score()}

    def _rollout_and_update(self, phase: str) -> tuple[list[dict[str, Any]], dict[str, float]]:
        if self.env is None:
            self._open_env()
        start_step = self.global_step
        self.obs, finished_episodes = self.agent.collect(self.env, self.obs, self.action_rng)
        losses = self.agent.update(self.shuffle_rng)
        bad = {k: v for k, v in losses.items() if not math.isfinite(v)}
        if bad:  # the weights are spoilt from here on: stop before anything is logged
            name, value = next(iter(bad.items()))
            raise EnvGenError(
                f"{self.run_dir}: training diverged at step {self.global_step}: loss "
                f"{name} is {value} (rollout {self.counters.rollouts + 1}); lower ppo.lr "
                f"({self.ppo_cfg.lr}) or ppo.max_grad_norm and start over"
            )
        self.counters.global_step += self.ppo_cfg.rollout_size
        self.counters.rollouts += 1
        records = []
        for ep in finished_episodes:
            step = start_step + (ep.t + 1) * self.ppo_cfg.num_envs
            record = self.episode_record(ep.info, step, phase)
            self.episodes.write(record)
            records.append(record)
        self.recent.extend(records)
        return records, losses

    def _open_env(self) -> None:
        """Open the vec env: from the checkpoint's state after a resume, else fresh."""
        assert self.mixture is not None
        seed = derive_seed(self.seed, "env")
        saved, self._saved_env = self._saved_env, None
        configs, weights = saved[0] if saved else self.mixture
        self.env = self.env_factory(configs, self.ppo_cfg.num_envs, seed, weights)
        if saved is None:
            self.obs = self.env.reset()
            self.agent.episodes_reset()
            return
        try:
            self.env.set_state(saved[1])
        except (AttributeError, KeyError, TypeError, ValueError, IndexError, RuntimeError) as exc:
            self.close_env()
            raise EnvGenError(
                f"{self.run_dir / LATEST_CHECKPOINT}: the saved environment state is "
                f"malformed ({type(exc).__name__}); remove {self.run_dir / CHECKPOINT_DIR} "
                "to resume from step 0"
            ) from None
        self.obs = self.env.last_obs
        if saved[0] != self.mixture:  # the checkpoint fell on a phase boundary
            self._switch(self.mixture)

    def _switch(self, mixture: tuple[tuple[Any, ...], tuple[float, ...] | None]) -> None:
        """Reset every env into the new mixture; the episodes it ends are counted."""
        assert self.env is not None
        cut = int(self.env.set_mixture(*mixture) or 0)
        self.counters.episodes_cut += cut
        self._cut += cut
        self.obs = self.env.last_obs
        self.agent.episodes_reset()

    def _running_score(self) -> str:
        return f"{self.summarize(list(self.recent))['score']:.2f}%" if self.recent else "-"

    # --- checkpoints ---------------------------------------------------------------
    def checkpoint(self) -> Path:
        """Write a checkpoint, the vec env's running episodes included (module docstring)."""
        self.counters.checkpoints += 1
        self.counters.checkpoint_step = self.global_step
        self._checkpointed_at = time.monotonic()
        env_state = None
        if self.env is not None:
            env_state = (mixture_to_plain(self.mixture), self.env.get_state())
        elif self._saved_env is not None:  # resumed, not yet stepped: keep what was saved
            env_state = (mixture_to_plain(self._saved_env[0]), self._saved_env[1])
        agent = {"agent": self.agent_name} if self.agent_name != "ppo" else {}
        return save_checkpoint(
            self.run_dir / CHECKPOINT_DIR,
            seed_state(
                self.model_cfg,
                self.ppo_cfg,
                self.seed,
                self.counters,
                self.agent.state_dict(),
                self.action_rng,
                self.shuffle_rng,
                env_state,
                **agent,
            ),
        )

    def resume(self) -> bool:
        """Load the latest checkpoint if there is one; truncate logs to its step.

        Without a checkpoint the run starts from step 0, so the logs of a run killed
        before its first checkpoint are emptied: a resumed run logs each episode once.
        Raises `ConfigError` when the checkpoint was written with other configs or seed.
        """
        state = load_checkpoint(self.run_dir / CHECKPOINT_DIR, self.device)
        if state is None:
            self.episodes.truncate_after(0)
            self.metrics.truncate_after(0)
            return False
        check_written_with(
            state, self.run_dir, self.model_cfg, self.ppo_cfg, self.seed, self.agent_name
        )
        if state.get("cohort") is not None:  # a slice of a cohort (envgen.agents.cohort_trainer)
            raise ConfigError(
                "cohort",
                f"the checkpoint in {self.run_dir} is a slice of a cohort of "
                f"{state['cohort'].get('size') if isinstance(state['cohort'], dict) else '?'} "
                "seeds; resume it in a cohort of that size",
            )
        path = self.run_dir / LATEST_CHECKPOINT
        try:
            raw = checked_counters(
                state["counters"], path, self.ppo_cfg.rollout_size, self.metrics.path
            )
            self.agent.load_state_dict(state)
            counters = Counters(**raw)
            restore_streams(
                state, self.action_rng, self.shuffle_rng, self.seed, counters.checkpoint_step
            )
            saved_env = state.get("env")
            if saved_env is not None:
                saved_env = (mixture_from_plain(saved_env[0]), saved_env[1])
        except (KeyError, TypeError, ValueError, IndexError, RuntimeError) as exc:
            raise EnvGenError(
                f"{path}: malformed checkpoint ({type(exc).__name__}: "
                f"{str(exc).splitlines()[0][:200] if str(exc) else 'no detail'}); remove "
                f"{path.parent} to resume from step 0"
            ) from None
        self.counters = counters
        self.episodes.truncate_after(self.global_step)
        self.metrics.truncate_after(self.global_step)
        self.close_env()
        self._saved_env = saved_env
        self._checkpointed_at = time.monotonic()
        return True

    def close_env(self) -> None:
        """Close the vec env (unfinished episodes are dropped; used when a run ends)."""
        if self.env is not None:
            self.env.close()
        self.env, self.obs = None, None

    def close(self) -> None:
        self.close_env()
        self.episodes.close()
        self.metrics.close()
