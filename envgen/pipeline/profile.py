"""`Profile`: how a replication file's paper step counts become concrete runs.

A profile is one entry of ``profiles:`` in params.yaml; the top-level ``profile:`` key
picks it. Scaling is the only place the pipeline departs from the paper's numbers
(docs/pipeline.md, "Profiles"); everything it changes is part of each run's config,
hence of its hash, so runs of different profiles never share a directory.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from envgen.agents.config import PPOConfig, from_mapping, model_preset
from envgen.errors import ConfigError
from envgen.loop.config import RunConfig

# RunConfig fields counted in env steps; a profile scales each of them.
STEP_FIELDS: tuple[str, ...] = (
    "llm_env_steps",
    "orig_env_steps",
    "final_steps",
    "original_only_steps",
)


@dataclasses.dataclass(frozen=True)
class Profile:
    """One named budget: step scale, seeds, network, PPO overrides, evaluation sizes."""

    name: str
    """The key under ``profiles:`` (smoke | reduced | paper)."""
    step_scale: float
    """Multiplier of every paper step count (1.0 = the paper's protocol)."""
    round_to_rollouts: bool
    """Round each scaled phase to whole PPO rollouts (at least `min_rollouts` of them)."""
    min_rollouts: int
    """Smallest length of a phase the paper gives steps to, in rollouts."""
    seeds: tuple[int, ...]
    """Run seeds of every trained row (paper: 10)."""
    initial_sets: tuple[int, ...]
    """Initial LLM environment sets per seed (paper: 3; runs = sets x seeds)."""
    model: str
    """Network preset (`envgen.agents.config.MODEL_PRESETS`)."""
    ppo: tuple[tuple[str, Any], ...]
    """PPO overrides of Table 9, as sorted (name, value) pairs."""
    eval_episodes: int
    """Evaluation episodes after each cycle (paper: 12)."""
    validation_steps: int
    """Env steps of each curriculum validation agent (paper: unstated)."""
    llm_history_cycles: int
    """History bound of adaptation prompts (0 = whole conversation, the paper); a row's
    own non-zero `llm_history_cycles` wins. Small-context local models need it for
    Table 3's 8- and 40-cycle rows."""
    random_episodes: int
    """Episodes per seed of the Random row (a uniform random policy in stock Crafter)."""
    torch_threads: int
    """Torch intra-op threads per run; fixed so a replayed run repeats its numbers."""
    device: str
    """Torch device of every run (cpu | cuda)."""
    claim_grade: bool
    """Whether runs may reproduce or contradict the paper's claims (paper budgets only)."""

    def __post_init__(self) -> None:
        if self.step_scale <= 0:
            raise ConfigError(f"profiles.{self.name}.step_scale", "must be > 0 (1.0 = paper)")
        if self.llm_history_cycles < 0:
            raise ConfigError(
                f"profiles.{self.name}.llm_history_cycles", "must be >= 0 (0 = whole history)"
            )
        for name in ("min_rollouts", "eval_episodes", "random_episodes", "torch_threads"):
            if getattr(self, name) < 1:
                raise ConfigError(f"profiles.{self.name}.{name}", "must be a positive integer")
        for name in ("seeds", "initial_sets"):
            values = getattr(self, name)
            if not values or min(values) < 0 or len(set(values)) != len(values):
                raise ConfigError(
                    f"profiles.{self.name}.{name}",
                    "give a non-empty list of distinct non-negative integers",
                )
        model_preset(self.model)
        from_mapping(PPOConfig, dict(self.ppo), f"profiles.{self.name}.ppo")

    @property
    def ppo_config(self) -> PPOConfig:
        return from_mapping(PPOConfig, dict(self.ppo), f"profiles.{self.name}.ppo")

    @property
    def rollout_size(self) -> int:
        """Env steps per PPO rollout under this profile."""
        return self.ppo_config.rollout_size

    def steps(self, paper_steps: int) -> int:
        """A paper step count under this profile; zero stays zero."""
        if paper_steps == 0:
            return 0
        scaled = paper_steps * self.step_scale
        if not self.round_to_rollouts:
            return int(round(scaled))
        rollouts = max(self.min_rollouts, int(round(scaled / self.rollout_size)))
        return rollouts * self.rollout_size

    def apply(self, config: RunConfig, initial_set: int) -> RunConfig:
        """`config` (paper units) as this profile runs it for one initial set."""
        changes: dict[str, Any] = {name: self.steps(getattr(config, name)) for name in STEP_FIELDS}
        changes.update(
            initial_set=initial_set if config.uses_llm else 0,
            model=self.model,
            ppo=dict(self.ppo),
            eval_episodes=self.eval_episodes,
            validation_steps=self.validation_steps,
            llm_history_cycles=config.llm_history_cycles or self.llm_history_cycles,
        )
        return config.replace(**changes)


def load_profile(params: Mapping[str, Any], name: str | None = None) -> Profile:
    """The profile `name` (default: params["profile"]) from a params.yaml mapping."""
    profiles = params.get("profiles") or {}
    name = name or params.get("profile")
    if not name:
        raise ConfigError("profile", "params.yaml needs `profile: NAME` (e.g. smoke)")
    if name not in profiles:
        raise ConfigError(
            "profile", f"{name!r} is not under `profiles:`; choose one of {', '.join(profiles)}"
        )
    data = dict(profiles[name])
    fields = {f.name for f in dataclasses.fields(Profile)} - {"name"}
    unknown = sorted(set(data) - fields)
    if unknown:
        raise ConfigError(
            f"profiles.{name}.{unknown[0]}", f"unknown key; allowed: {', '.join(sorted(fields))}"
        )
    missing = sorted(fields - set(data))
    if missing:
        raise ConfigError(f"profiles.{name}.{missing[0]}", "missing; every profile sets it")
    data["seeds"] = tuple(data["seeds"])
    data["initial_sets"] = tuple(data["initial_sets"])
    data["ppo"] = tuple(sorted(dict(data["ppo"] or {}).items()))
    return Profile(name=name, **data)
