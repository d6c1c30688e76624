"""`Trainer`: an agent (PPO or AD) on a mixture of level configs, resumable, phase by phase.

The game enters only through the vec-env factory and the episode-log functions
(`envgen.games` holds them per game; Crafter's are the defaults). The EnvGen loop calls
`train(steps, configs)` or `train_until(step, configs)` once per phase with a new
mixture; optimiser, normaliser, RNG streams and vec env carry over. Steps are global env
steps counted in whole rollouts: a call stops at the first rollout boundary at or past
its target, and targets are absolute, so overshoot never accumulates.

Checkpoints (docs/agent.md, "Reproducibility and resume") come every
`PPOConfig.checkpoint_every` steps, at the first rollout boundary `checkpoint_seconds`
after the last one when set (wall-clock jobs: `envgen gpu run`), and on `checkpoint()`.
One changes no number and ends no episode: it holds every env mid-episode, so a run
killed and resumed equals an uninterrupted one. Only a mixture switch (a phase boundary)
ends running episodes; they are counted (`episodes_cut` in counters and metrics).
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import math
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import torch
from tqdm import tqdm

from envgen.agents import ad, ppo
from envgen.agents.checkpoint import load_checkpoint, save_checkpoint
from envgen.agents.checkpoint_counters import ResumeRefusedError, checked_counters
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
    checkpoint every `checkpoint_rollouts` rollouts or `checkpoint_seconds` of wall clock,
    each run's checkpoint slice (`_slice`) and one resume flow over them (`resume`). Run k
    is `seeds[k]` in `run_dirs[k]` with its own streams and logs.

    A subclass says what a rollout and update of every run is (`_rollout`: each run's
    metrics line without step, phase and speed), writes checkpoints, closes its envs,
    gives a slice's step (`_slice_step`: a `ConfigError` if it cannot resume it) and takes
    the slices back: learners (`_load_learners`), envs' (mixture, state) or None."""

    agent_name = "ppo"
    _checkpoint_names = (LATEST_CHECKPOINT.name,)  # each run's checkpoint files, read
    _config_fix = "use a new --out directory"  # how to resolve a settings mismatch
    _restart = "start over"  # what a diverged run says to do

    def __init__(
        self,
        model_cfg: ModelConfig,
        ppo_cfg: PPOConfig,
        seeds: Sequence[int],
        run_dirs: Sequence[Path | str],
        device: str | torch.device,
        episode_record: EpisodeRecord,
        progress: bool,
        checkpoint_seconds: float,
    ):
        """Each run's random streams (from its seed) and logs (`RunDir`'s), opened last:
        a subclass builds its learners first, so a refused config leaves no file."""
        self.model_cfg, self.ppo_cfg, self.seeds = model_cfg, ppo_cfg, list(seeds)
        self.run_dirs = [Path(d) for d in run_dirs]
        self.device = torch.device(device)
        self.episode_record = episode_record
        self.progress = progress
        self.checkpoint_seconds = checkpoint_seconds
        self._checkpointed_at = time.monotonic()
        self.counters = Counters()
        self.mixture: tuple[tuple[Any, ...], tuple[float, ...] | None] | None = None
        self.action_rngs = [torch.Generator(device=self.device) for _ in self.seeds]
        for rng, seed in zip(self.action_rngs, self.seeds, strict=True):
            rng.manual_seed(derive_seed(seed, "actions"))
        self.shuffle_rngs = [np.random.default_rng(derive_seed(s, "minibatches")) for s in seeds]
        self.episode_logs = [JsonlLog(RunDir(d).episodes) for d in self.run_dirs]
        self.metrics_logs = [JsonlLog(RunDir(d).metrics) for d in self.run_dirs]

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
        raise NotImplementedError

    def _postfix(self) -> dict[str, str]:
        return {}

    def _check_finite(self, k: int, losses: Mapping[str, float]) -> None:
        """A non-finite loss of run `k` spoils its weights: it stops before anything of
        the rollout is logged."""
        bad = [(name, value) for name, value in losses.items() if not math.isfinite(value)]
        if bad:
            name, value = bad[0]
            raise EnvGenError(
                f"{self.run_dirs[k]}: training diverged at step {self.global_step}: loss "
                f"{name} is {value} (rollout {self.counters.rollouts + 1}); lower ppo.lr "
                f"({self.ppo_cfg.lr}) or ppo.max_grad_norm and {self._restart}"
            )

    def _log_episodes(
        self, k: int, episodes: Sequence[ppo.FinishedEpisode], start_step: int, phase: str
    ) -> list[dict[str, Any]]:
        """Log run `k`'s episodes of the rollout that began at `start_step`, each at the
        global step it ended; their records."""
        records = []
        for ep in episodes:
            step = start_step + (ep.t + 1) * self.ppo_cfg.num_envs
            records.append(self.episode_record(ep.info, step, phase))
            self.episode_logs[k].write(records[-1])
        return records

    def _clock_due(self) -> bool:
        return bool(
            self.checkpoint_seconds
            and time.monotonic() - self._checkpointed_at >= self.checkpoint_seconds
        )

    def _checkpoint_due(self) -> bool:
        return self.counters.rollouts % self.ppo_cfg.checkpoint_rollouts == 0 or self._clock_due()

    def checkpoint(self) -> Any:
        raise NotImplementedError

    def close_env(self) -> None:
        raise NotImplementedError

    def close(self) -> None:
        """Close the envs and every run's logs."""
        self.close_env()
        for log in (*self.episode_logs, *self.metrics_logs):
            log.close()

    # --- checkpoints: one seed's slice, written and resumed the same way for every run ---
    def _count_checkpoint(self) -> None:
        self.counters.checkpoints += 1
        self.counters.checkpoint_step = self.global_step
        self._checkpointed_at = time.monotonic()

    def _settings(self, k: int) -> dict[str, Any]:
        """How run `k` trains: its slice records them, and a resume requires them."""
        model_cfg, ppo_cfg = dataclasses.asdict(self.model_cfg), dataclasses.asdict(self.ppo_cfg)
        return {"model_cfg": model_cfg, "ppo_cfg": ppo_cfg, "seed": self.seeds[k]}

    def _slice(self, k: int, learner: dict[str, Any], env: Any, **tags: Any) -> dict[str, Any]:
        """Run `k`'s checkpoint: its settings, `tags` (a cohort's `cohort`, AD's `agent`),
        counters, the `learner`'s state (model, optimizer, ...), both random streams and
        its running envs' state `env` (None before any env ran)."""
        if self.agent_name != "ppo":
            tags["agent"] = self.agent_name
        action_rng = self.action_rngs[k]
        return {
            **self._settings(k),
            **tags,
            "counters": dataclasses.asdict(self.counters),
            **learner,
            "action_rng": {"device": action_rng.device.type, "state": action_rng.get_state()},
            "shuffle_rng": self.shuffle_rngs[k].bit_generator.state,
            "env": env,
        }

    def _fix(self, path: Path) -> str:
        """What to do about the refused checkpoint slice `path`."""
        return f"remove {path.parent} to resume from step 0"

    def resume(self) -> bool:
        """Load the latest checkpoint (a cohort: the newest step every seed has a slice
        of) and cut every log back to its step; without one, empty the logs (a run killed
        before its first checkpoint restarts at step 0 and logs each episode once).

        Every slice is checked before anything is loaded or cut: written with other
        settings (model or PPO config, seed, agent), a `ConfigError`; counters that are
        not the run alone's (`checked_counters`) or every seed's, or a malformed slice,
        one `EnvGenError` line naming it."""
        found = self._checkpoint_slices()
        if found is None:
            for log in (*self.episode_logs, *self.metrics_logs):
                log.truncate_after(0)
            return False
        step, slices = found
        for k, (_, state) in enumerate(slices):
            ours = {**self._settings(k), "agent": self.agent_name}
            for key, value in ours.items():
                if (theirs := state.get(key, "ppo")) != value:  # PPO's slices have no agent
                    raise ConfigError(
                        key,
                        f"checkpoint in {self.run_dirs[k]} was written with {theirs!r}, not "
                        f"{value!r}; resume with the same settings or {self._config_fix}",
                    )
        counters = self._agreed_counters(step, slices)  # before anything is loaded or cut
        envs: list[tuple[Any, dict[str, Any]] | None] = []
        try:
            self._load_learners([state for _, state in slices])
            for k, (_, state) in enumerate(slices):
                self._restore_streams(k, state, counters.checkpoint_step)
                env = state.get("env")
                envs.append(None if env is None else (mixture_from_plain(env[0]), env[1]))
        except (KeyError, TypeError, ValueError, IndexError, RuntimeError) as exc:
            path = slices[len(envs)][0]  # the slice being read (the first: the learners')
            raise EnvGenError(
                f"{path}: malformed checkpoint ({type(exc).__name__}: "
                f"{str(exc).splitlines()[0][:200] if str(exc) else 'no detail'}); "
                f"{self._fix(path)}"
            ) from None
        self.counters = counters
        for log in (*self.episode_logs, *self.metrics_logs):
            log.truncate_after(self.global_step)
        self.close_env()
        self._resume_envs(envs)
        self._checkpointed_at = time.monotonic()
        return True

    def _restore_streams(self, k: int, state: dict[str, Any], checkpoint_step: int) -> None:
        """Restore run `k`'s two random streams (ValueError on a malformed state). The
        action generator is re-seeded when the checkpoint's is another device's (CPU and
        CUDA states do not convert) from (seed, the checkpoint's step: wall-clock
        checkpoints vary their count), so a cross-device resume is reproducible but not
        the uninterrupted run (docs/agent.md, "Reproducibility and resume")."""
        saved, action_rng = state["action_rng"], self.action_rngs[k]
        if not isinstance(saved, dict) or not isinstance(saved.get("state"), torch.Tensor):
            raise ValueError("action_rng: expected {device, state}")
        ours, theirs = action_rng.get_state(), saved["state"].cpu()
        if saved.get("device") == action_rng.device.type and theirs.shape == ours.shape:
            action_rng.set_state(theirs)
        else:
            action_rng.manual_seed(derive_seed(self.seeds[k], "actions", checkpoint_step))
        self.shuffle_rngs[k].bit_generator.state = state["shuffle_rng"]

    def _agreed_counters(
        self, step: int | None, slices: Sequence[tuple[Path, dict[str, Any]]]
    ) -> Counters:
        """The slices' counters, each held to the run alone's checks (`checked_counters`),
        at `step` (a cohort's) when given and the same in every slice; else a one-line
        `EnvGenError` naming the slice."""
        first = None
        for k, (path, state) in enumerate(slices):
            fix, log = self._fix(path), self.metrics_logs[k].path
            raw = checked_counters(state.get("counters"), path, self.ppo_cfg.rollout_size, log, fix)
            if step is not None and raw.get("global_step", 0) != step:
                raise ResumeRefusedError(
                    f"{path}: counter global_step {raw.get('global_step', 0)} is not the "
                    f"cohort's step {step}; {fix}"
                )
            if first is not None and raw != first[1]:
                raise ResumeRefusedError(
                    f"{path}: counters {raw} differ from {first[0]}'s {first[1]} (a cohort's "
                    f"seeds share them); {fix}"
                )
            first = first or (path, raw)
        assert first is not None
        return Counters(**first[1])

    @contextlib.contextmanager
    def _restoring_env_state(self) -> Iterator[None]:
        """Around setting the envs' saved state: a state that does not fit closes the envs
        and is one line naming the checkpoint."""
        try:
            yield
        except (AttributeError, KeyError, TypeError, ValueError, IndexError, RuntimeError) as exc:
            self.close_env()
            path = self.run_dirs[0] / LATEST_CHECKPOINT
            raise EnvGenError(
                f"{path}: the saved environment state is malformed ({type(exc).__name__}); "
                f"{self._fix(path)}"
            ) from None

    def _checkpoint_slices(self) -> tuple[int | None, list[tuple[Path, dict[str, Any]]]] | None:
        """(the newest step every run has a slice of, None for a run alone, and each run's
        (file, slice)); None when no run has a checkpoint."""
        found: list[dict[int | None, tuple[Path, dict[str, Any]]]] = []
        for run_dir in self.run_dirs:  # each run's step -> (file, slice)
            found.append({})
            for name in self._checkpoint_names:
                if state := load_checkpoint(run_dir / CHECKPOINT_DIR, self.device, name):
                    path = run_dir / CHECKPOINT_DIR / name
                    found[-1][self._slice_step(path, state.get("cohort"))] = (path, state)
        if not any(found):
            return None
        common = set.intersection(*(set(f) for f in found))
        if not common:
            missing = [str(d) for d, f in zip(self.run_dirs, found, strict=True) if not f]
            raise ConfigError(
                "cohort",
                f"the seeds' checkpoints share no step ({', '.join(missing) or 'steps differ'}); "
                f"{self._fix(self.run_dirs[0])}",
            )
        step = max(common)
        return step, [f[step] for f in found]

    def _slice_step(self, path: Path, cohort: Any) -> int | None:
        raise NotImplementedError

    def _load_learners(self, states: list[dict[str, Any]]) -> None:
        raise NotImplementedError

    def _resume_envs(self, envs: list[tuple[Any, dict[str, Any]] | None]) -> None:
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
        self.agent_name, self.seed, self.run_dir = agent, seed, Path(run_dir)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(derive_seed(seed, "model"))
            self.agent = AGENTS[agent](model_cfg, ppo_cfg, torch.device(device))
        self.model = self.agent.model
        args = episode_record, progress, checkpoint_seconds
        super().__init__(model_cfg, ppo_cfg, [seed], [run_dir], device, *args)
        self.action_rng, self.shuffle_rng = self.action_rngs[0], self.shuffle_rngs[0]
        self.episodes, self.metrics = self.episode_logs[0], self.metrics_logs[0]
        self.env_factory = env_factory or crafter_vec_env_factory()
        self.summarize = summarize
        self.env: ppo.VecEnv | None = None
        self.obs: np.ndarray | None = None
        self._saved_env: tuple[Any, dict[str, Any]] | None = None  # (mixture, state)
        self._cut = 0  # episodes cut since the last metrics line
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
        """Train on the mixture until the global step reaches `step` (rollout granularity;
        a target already reached returns at once, so a resumed run replays its calls).
        Returns `summarize` (Crafter's by default) of the episodes it finished, or
        {"episodes": 0} when none finished."""
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
        if self.env is None:
            self._open_env()
        start_step = self.global_step
        self.obs, finished = self.agent.collect(self.env, self.obs, self.action_rng)
        losses = self.agent.update(self.shuffle_rng)
        self._check_finite(0, losses)
        self.counters.global_step += self.ppo_cfg.rollout_size
        self.counters.rollouts += 1
        records = self._log_episodes(0, finished, start_step, phase)
        self.recent.extend(records)
        self._finished += records
        line = {
            "episodes": len(records),
            **({"episodes_cut": self._cut} if self._cut else {}),
            **{f"losses/{k}": v for k, v in losses.items()},
        }
        self._cut = 0
        return [line]

    def _postfix(self) -> dict[str, str]:
        score = f"{self.summarize(list(self.recent))['score']:.2f}%" if self.recent else "-"
        return {"score": score}

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
        with self._restoring_env_state():
            self.env.set_state(saved[1])
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

    # --- checkpoints ---------------------------------------------------------------
    def checkpoint(self) -> Path:
        """Write a checkpoint, the vec env's running episodes included (module docstring)."""
        self._count_checkpoint()
        saved = self._saved_env  # resumed, not yet stepped: keep what was saved
        if self.env is not None:
            saved = (self.mixture, self.env.get_state())
        env_state = None if saved is None else (mixture_to_plain(saved[0]), saved[1])
        state = self._slice(0, self.agent.state_dict(), env_state)
        return save_checkpoint(self.run_dir / CHECKPOINT_DIR, state)

    def _slice_step(self, path: Path, cohort: Any) -> None:
        if cohort is not None:  # a slice of a cohort (envgen.agents.cohort_trainer)
            size = cohort.get("size") if isinstance(cohort, dict) else "?"
            raise ConfigError(
                "cohort",
                f"the checkpoint in {self.run_dir} is a slice of a cohort of {size} seeds; "
                "resume it in a cohort of that size",
            )

    def _load_learners(self, states: list[dict[str, Any]]) -> None:
        self.agent.load_state_dict(states[0])

    def _resume_envs(self, envs: list[tuple[Any, dict[str, Any]] | None]) -> None:
        self._saved_env = envs[0]

    def close_env(self) -> None:
        """Close the vec env (unfinished episodes are dropped; used when a run ends)."""
        if self.env is not None:
            self.env.close()
        self.env, self.obs = None, None
