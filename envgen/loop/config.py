"""`RunConfig`: one row of one table, as a typed config with a stable hash.

A run is fully described by its `RunConfig` plus a seed. Rows shared by several
tables (e.g. EnvGen with 4 cycles appears in Tables 1-4, 6 and 7) are the same config,
hence the same hash, hence the same directory under ``results/runs/``: trained once.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from envgen.agents.config import AGENTS, PPOOverrides, check_cohort
from envgen.envs.crafter.config import WORLD_RULES
from envgen.envs.game_rules import GAME_RULES
from envgen.errors import ConfigError
from envgen.input_checks import (
    MAX_COUNT,
    MAX_STEPS,
    at_most,
    check_fields,
    check_temperature,
    read_yaml_mapping,
)
from envgen.llm.conversation import AUTO, check_history_cycles
from envgen.loop.world_designers import DESIGNERS, RolloutBudget
from envgen.numerics import NATIVE, check_mode

# How the heuristic designer picks its first set (`RunConfig.heuristic_first_set`).
HEURISTIC_FIRST_SETS = ("initial_set", "seed_mod_3")

METHODS = ("envgen", "fixed", "original_only", "easy_to_hard", "adversarial")
CURRICULA = ("easy_to_hard", "adversarial")  # rank worlds by Crafter score: `GameSpec.base`
MAX_CYCLES = 10_000
POSITIVE = ("n_cycles", "envs_per_call", "eval_episodes", "feedback_evals", "validation_steps")
MAX_COHORT = 64
# Fields of a fixed set of values, and the set.
CHOICES: dict[str, Any] = {
    "game": GAME_RULES,
    "method": METHODS,
    "agent": AGENTS,
    "designer": DESIGNERS,
    "heuristic_first_set": HEURISTIC_FIRST_SETS,
    "llm_world_rules": WORLD_RULES,
    "original_world": WORLD_RULES,
}
# Fields left out of `RunConfig.to_dict`, hence of the hash, at these values: a config
# written before the field existed keeps its hash (its run directory and LLM slots).
HASH_DEFAULTS: dict[str, Any] = {
    "designer": "llm",
    "heuristic_first_set": "initial_set",
    "agent": "ppo",
    "bf16_autocast": False,
    "channels_last": False,
    "llm_temperature": 0.0,
    "llm_redraw_repeats": False,
    "cohort": 1,
    "cohort_groups": 1,
    "cohort_kernels": "eager",
    "cpu_numerics": NATIVE,
}
MIN_SCORED_STEPS_PER_ENV = 100
"""Fewest steps each env must play in Crafter's scored phase. The score averages the
episodes that phase finishes, and a near-random agent's episodes are the shortest: 28
to 163 steps (shortest to median, 150 episodes measured); a phase of fewer steps per env
would most likely finish none."""


def check_scored_phase(
    final_steps: int, num_envs: int, where: str = "final_steps", fix: str = "final_steps"
) -> None:
    """A `ConfigError` when Crafter's scored phase is too short to finish an episode;
    the message says to raise `fix`."""
    per_env = final_steps // max(num_envs, 1)
    if per_env < MIN_SCORED_STEPS_PER_ENV:
        raise ConfigError(
            where,
            f"the scored phase gives each of {num_envs} envs {per_env} steps, too few to "
            f"finish an episode (at least {MIN_SCORED_STEPS_PER_ENV}); raise {fix} "
            f"(final steps {MIN_SCORED_STEPS_PER_ENV * num_envs:,} or more)",
        )


@dataclasses.dataclass(frozen=True)
class RunConfig:
    """A training run's protocol. Every field that changes the numbers is part of the
    run's identity (`config_hash`).

    The defaults follow the paper's PPO + EnvGen schedule (Table 1) but not its network
    (`paper`, the IMPALA ResNet) or LLM (gpt-4-1106-preview); the pipeline's profiles
    (params.yaml) set both per table.
    """

    method: str = "envgen"
    """envgen (adaptive) | fixed | original_only (no LLM) | easy_to_hard | adversarial."""
    game: str = "crafter"
    """crafter | heist (Table 8: envgen with n_cycles 1, or original_only)."""
    n_cycles: int = 4
    """EnvGen cycles N_cycle (paper: 4 for Crafter, 1 for Heist)."""
    llm_env_steps: int = 120_000
    """T_LLM-Env: steps per cycle in the LLM environments (paper: 0.12M)."""
    orig_env_steps: int = 120_000
    """T_Orig-Env: steps per cycle in the original game (paper: 0.12M)."""
    final_steps: int = 1_000_000
    """Steps in the original game after the EnvGen phase (paper: 1M); scored window."""
    original_only_steps: int = 0
    """For original_only: total steps in the original game (0 = the EnvGen protocol's total)."""
    envs_per_call: int = 4
    """N: environments the LLM writes per call (paper: 4; Table 6: 1, 2, 4, 8)."""
    llm_model: str = "smollm2-135m-instruct"
    """Model id the LLM cache is keyed by (paper: gpt-4-1106-preview)."""
    llm_temperature: float = 0.0
    """Sampling temperature of the designer's calls (paper: 0), seeded by the initial set:
    a local model at 0 would write one reply for all 3 sets (docs/llm.md, "Temperature")."""
    llm_redraw_repeats: bool = False
    """Redraw an initial reply whose worlds repeat (`PromptOptions.redraw_repeats`)."""
    designer: str = "llm"
    """Who writes the environments: llm (the method) or a baseline (`DESIGNERS`)."""
    heuristic_first_set: str = "initial_set"
    """The heuristic designer's first set: by "initial_set" alone, or one of three by
    "seed_mod_3" (docs/loop.md, "Designers")."""
    sfl_candidates: int = 16
    """SFL: worlds drawn each cycle, of which it keeps the most learnable (docs/loop.md)."""
    sfl_rollout_envs: int = 2
    """SFL: envs that roll the current policy out on each candidate."""
    sfl_rollout_steps: int = 1024
    """SFL: steps each rollout env plays (a designed world's episode length, 1024)."""
    plr_candidates: int = 16
    """PLR-robust: worlds it scores each cycle, replayed ones included (docs/loop.md)."""
    plr_rollout_envs: int = 2
    """PLR-robust: envs that roll the current policy out on each world it scores."""
    plr_rollout_steps: int = 1024
    """PLR-robust: steps each rollout env plays (as `sfl_rollout_steps`)."""
    plr_capacity: int = 32
    """PLR-robust: worlds its buffer holds at most."""
    plr_temperature: float = 0.3
    """PLR-robust: beta of its rank prioritization (jaxued's maze default)."""
    plr_staleness: float = 0.3
    """PLR-robust: rho, the staleness share of the replay weights (jaxued's maze default)."""
    plr_min_fill: float = 0.5
    """PLR-robust: share of the buffer filled before it replays (jaxued's maze default)."""
    obfuscated: bool = False
    """Replace parameter names by parameter1.., optionA.., item1.. (ablation)."""
    llm_history_cycles: int | str = 0
    """Adaptations sent: 0 all, k the first and last k, "auto" all that fit the context
    (`PromptOptions.history_cycles`)."""
    initial_set: int = 0
    """Which initial LLM environment set (paper averages 3 sets x 10 seeds)."""
    curriculum_pool: int = 16
    """Easy-to-hard / adversarial: environments generated per ranking (paper: 16)."""
    validation_steps: int = 20_000
    """Easy-to-hard / adversarial: env steps of each validation agent (paper: unstated)."""
    eval_episodes: int = 12
    """Episodes per evaluation run after each cycle (paper: 12); Heist: test episodes."""
    feedback_evals: int = 3
    """Evaluation runs behind the feedback's "mean% +/- std%" (docs/loop.md, "Feedback")."""
    llm_world_rules: str = "authors"
    """Crafter: world rules of designed environments: "authors" (their fork) or "stock"."""
    original_world: str = "stock"
    """Crafter: world rules of the original game: "stock", or "authors" (their fork)."""
    model: str = "nature"
    """Policy network by registry name (paper: the 4M-parameter IMPALA ResNet)."""
    agent: str = "ppo"
    """The RL agent: ppo | ad (Achievement Distillation, Table 1's AD rows; docs/agent.md)."""
    ppo: PPOOverrides = PPOOverrides()
    """PPO overrides of the game's defaults (`envgen.games`)."""
    bf16_autocast: bool = False
    """Forward passes under bfloat16 autocast (`ModelConfig.bf16_autocast`)."""
    channels_last: bool = False
    """Convolutions in NHWC layout (`ModelConfig.channels_last`)."""
    cohort: int = 1
    """Seeds trained together as one batched model (`envgen.agents.cohort`)."""
    cohort_groups: int = 1
    """Groups a cohort is pipelined in (`envgen.agents.cohort_trainer`)."""
    cohort_kernels: str = "eager"
    """How a cohort runs its PPO update (`envgen.agents.config.COHORT_KERNELS`)."""
    cpu_numerics: str = "native"
    """CPU float code paths, "native" or "portable" (`envgen.numerics`)."""

    @property
    def cohort_eligible(self) -> bool:
        """Whether this run may train in a cohort: one mixture from start to end (the
        original game), PPO, a network vmap can batch (NCHW)."""
        return (
            self.method == "original_only"
            and GAME_RULES[self.game].cohorts
            and self.agent == "ppo"
            and not self.channels_last
        )

    @property
    def gpu_options(self) -> dict[str, bool]:
        """The network options `GameSpec.model_config` takes."""
        return {"bf16_autocast": self.bf16_autocast, "channels_last": self.channels_last}

    def __post_init__(self) -> None:
        object.__setattr__(self, "ppo", PPOOverrides(self.ppo))  # names and types checked
        for name, allowed in CHOICES.items():
            if getattr(self, name) not in allowed:
                raise ConfigError(name, f"{getattr(self, name)!r}; allowed: {', '.join(allowed)}")
        if type(self.cohort) is not int or not 1 <= self.cohort <= MAX_COHORT:
            raise ConfigError("cohort", f"{self.cohort!r}: a whole number in 1..{MAX_COHORT}")
        check_cohort(self.cohort, self.cohort_groups, self.cohort_kernels)
        check_mode(self.cpu_numerics)
        if self.cohort > 1 and not self.cohort_eligible:
            raise ConfigError(
                "cohort",
                "cohorts train PPO runs of the original Crafter game (method original_only, "
                "agent ppo, channels_last off); set cohort 1 for this run",
            )
        if not DESIGNERS[self.designer].llm and (not GAME_RULES[self.game].base or self.obfuscated):
            raise ConfigError(
                "designer",
                f"{self.designer!r} writes plain-named Crafter worlds only; use designer: llm",
            )
        for designer, kind in DESIGNERS.items():
            for name in kind.fields if self.designer != designer else ():
                if getattr(self, name) != getattr(RunConfig, name):
                    raise ConfigError(name, f"applies to designer: {designer} only; leave it out")
        self._check_curation()
        if not GAME_RULES[self.game].base and self.method in CURRICULA:
            raise ConfigError(
                "method",
                f"{self.method!r} ranks environments by the Crafter score and runs on "
                f"crafter only; for {self.game} use envgen, fixed or original_only",
            )
        for name in POSITIVE:
            if getattr(self, name) < 1:
                raise ConfigError(name, "must be >= 1")
        for name in ("llm_env_steps", "orig_env_steps", "final_steps", "original_only_steps"):
            if getattr(self, name) < 0:
                raise ConfigError(name, "must be >= 0")
            at_most(getattr(self, name), MAX_STEPS, name, "env steps of one phase")
        if self.final_steps < 1:
            raise ConfigError("final_steps", "must be >= 1: the final phase is what is scored")
        check_history_cycles(self.llm_history_cycles, "llm_history_cycles")
        check_temperature(self.llm_temperature, "llm_temperature")
        at_most(self.n_cycles, MAX_CYCLES, "n_cycles", "cycles of one run; paper: 4 to 40")
        at_most(self.envs_per_call, 64, "envs_per_call", "environments in one reply; paper: 1-8")
        at_most(self.curriculum_pool, 4096, "curriculum_pool", "environments per ranking")
        for name in ("eval_episodes", "feedback_evals", "llm_history_cycles", "initial_set"):
            if getattr(self, name) != AUTO:
                at_most(getattr(self, name), MAX_COUNT, name, "repetitions")
        at_most(self.validation_steps, MAX_STEPS, "validation_steps", "env steps of one agent")
        at_most(self.total_steps, MAX_STEPS, "n_cycles", "env steps of the whole run")

    def _check_curation(self) -> None:
        """A curating designer's fields (SFL's, PLR's): EnvGen's schedule only, rollouts
        inside a cycle, its own ranges (`CurationSettings.check`)."""
        budget = self.rollouts
        if budget is None:
            return
        kind, settings = self.designer, self.designer_settings
        if self.method != "envgen":
            raise ConfigError(
                "designer",
                f"{kind} curates each cycle of method envgen; got method {self.method!r}",
            )
        names = DESIGNERS[kind].fields[:3]  # candidates, rollout envs, rollout steps
        for name in names:
            if getattr(self, name) < 1:
                raise ConfigError(name, "must be >= 1")
            at_most(getattr(self, name), MAX_STEPS, name, "candidates, envs or steps")
        settings.check()
        needed = self.envs_per_call * (1 + settings.replays)
        if budget.candidates < needed:
            raise ConfigError(
                names[0],
                f"{budget.candidates} candidates cannot give {self.envs_per_call} worlds "
                f"(envs_per_call); sample at least {needed}",
            )
        if budget.env_steps >= self.llm_env_steps:
            raise ConfigError(
                names[0],
                f"{kind.upper()}'s rollouts take {budget.candidates} x {budget.envs} x "
                f"{budget.steps} = {budget.env_steps:,} env steps a cycle, out of its "
                f"llm_env_steps ({self.llm_env_steps:,}), leaving none to train; lower "
                f"{', '.join(names[:2])} or {names[2]}",
            )

    # --- derived values --------------------------------------------------------------
    @property
    def designer_settings(self) -> Any:
        """The designer's settings dataclass from its fields (`DESIGNERS`), or None."""
        settings = DESIGNERS[self.designer].settings
        if settings is None:
            return None
        return settings(**{f.name: getattr(self, f.name) for f in dataclasses.fields(settings)})

    @property
    def rollouts(self) -> RolloutBudget | None:
        """What the designer's rollouts of the policy play each cycle (SFL, PLR), or None."""
        return self.designer_settings.budget if DESIGNERS[self.designer].rollouts else None

    @property
    def curation_steps_per_cycle(self) -> int:
        """Env steps of SFL's or PLR's rollouts each cycle (0 for other designers); they
        come out of the cycle's `llm_env_steps`."""
        return 0 if self.rollouts is None else self.rollouts.env_steps

    @property
    def curation_steps(self) -> int:
        """Env steps of SFL's or PLR's rollouts over the run (0 for other designers)."""
        return self.n_cycles * self.curation_steps_per_cycle

    @property
    def trained_steps(self) -> int:
        """Env steps the trainer takes (before rounding up to whole rollouts)."""
        return self.total_steps - self.curation_steps

    @property
    def uses_designer(self) -> bool:
        """Whether environments are designed (every method but the original game alone)."""
        return self.method != "original_only"

    @property
    def uses_llm(self) -> bool:
        """Whether the designer is the LLM (needs replies: cache or server)."""
        return self.uses_designer and DESIGNERS[self.designer].llm

    @property
    def llm_adapts(self) -> bool:
        """Whether an LLM adapts this run's worlds to its feedback: what the "-llm" results
        version covers (`envgen.results_version.version_key`)."""
        return self.uses_llm and self.method == "envgen" and self.n_cycles > 1

    @property
    def total_steps(self) -> int:
        """Env steps of the run: the EnvGen protocol's (cycles, then the final phase), or
        an original_only run's own `original_only_steps`."""
        envgen = self.n_cycles * (self.llm_env_steps + self.orig_env_steps) + self.final_steps
        if self.method == "original_only":
            return self.original_only_steps or envgen
        return envgen

    # --- identity ---------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """Every field but those at their `HASH_DEFAULTS` value and other designers'
        fields, so that configs written before these existed keep their hash (their run
        directories and LLM slots)."""
        out = dataclasses.asdict(self)
        out["ppo"] = self.ppo.to_dict()
        for name, default in HASH_DEFAULTS.items():
            if out[name] == default:
                del out[name]
        for designer, kind in DESIGNERS.items():
            for name in kind.fields if self.designer != designer else ():
                out.pop(name, None)
        return out

    def config_hash(self) -> str:
        """12 hex digits of sha256 over the canonical JSON of every field."""
        canonical = json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canonical.encode()).hexdigest()[:12]

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RunConfig:
        """Typed construction: an unknown key fails loudly, naming the allowed ones."""
        check_fields(cls, data, what="run option")
        return cls(**data)

    @classmethod
    def from_yaml(cls, path: str | Path) -> RunConfig:
        """The config in a YAML file; any mistake is a `ConfigError` naming file and field."""
        data = read_yaml_mapping(path, "a run config (fields: envgen.loop.config.RunConfig)")
        try:
            return cls.from_dict(data)
        except ConfigError as exc:
            raise exc.in_file(path) from None

    def replace(self, **changes: Any) -> RunConfig:
        return RunConfig.from_dict({**self.to_dict(), **changes})
