"""`Profile`: how a replication file's paper step counts become concrete runs.

A profile is one entry of ``profiles:`` in params.yaml; the top-level ``profile:`` key
picks it. Scaling is the only place the pipeline departs from the paper's numbers
(docs/pipeline.md, "Profiles"); all it changes is part of each run's config, hence of its
hash, so runs of different profiles never share a directory. The profile's own step
scale, seeds, initial sets, network, PPO overrides and evaluation size are Crafter's
(Tables 1-7); rows of another game (Heist, Table 8) take these from the profile's
`games.<game>` section, since the games differ in rollout size, network, test protocol
and number of runs.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Collection, Mapping
from typing import Any

from envgen.agents.config import PPOConfig, PPOOverrides, check_cohort, model_preset
from envgen.envs.crafter.config import WORLD_RULES
from envgen.errors import ConfigError
from envgen.games import GAMES, game_spec
from envgen.input_checks import (
    MAX_COUNT,
    MAX_STEPS,
    at_most,
    check_temperature,
    check_types,
    finite,
    unknown_key,
)
from envgen.llm.conversation import AUTO, check_history_cycles
from envgen.loop.config import RunConfig, check_scored_phase
from envgen.numerics import PORTABLE, check_mode

# RunConfig fields counted in env steps; a profile scales each of them.
STEP_FIELDS = ("llm_env_steps", "orig_env_steps", "final_steps", "original_only_steps")
# The largest step count of any row in the paper: Table 8's 25M Heist steps.
LARGEST_PAPER_STEPS = 25_000_000
# Profile fields a `games.<game>` section sets for that game's rows (all of them).
GAME_FIELDS = ("step_scale", "seeds", "initial_sets", "model", "ppo", "eval_episodes")


@dataclasses.dataclass(frozen=True)
class Profile:
    """One named budget: step scale, seeds, network, PPO overrides, evaluation sizes, of
    Crafter rows; `for_game` gives the view of another game."""

    name: str
    """The key under ``profiles:`` (smoke | cpu | reduced | paper)."""
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
    ppo: PPOOverrides
    """PPO overrides of the game's defaults (Crafter: Table 9), as `RunConfig.ppo` holds them."""
    eval_episodes: int
    """Evaluation episodes after each cycle (paper: 12); Heist: also the final test's (100)."""
    validation_steps: int
    """Env steps of each curriculum validation agent (paper: unstated)."""
    llm_history_cycles: int | str
    """History bound of adaptation prompts (0 = the whole conversation, the paper; "auto" =
    whole while it fits the local model's context; docs/llm.md, "Context")."""
    random_episodes: int
    """Episodes per seed of the Random row (a uniform random policy in stock Crafter)."""
    torch_threads: int
    """Torch intra-op threads per run; fixed so a replayed run repeats its numbers."""
    device: str
    """Torch device of every run (cpu | cuda)."""
    claim_grade: bool
    """Whether runs may reproduce or contradict the paper's claims (paper budgets only)."""
    llm_model: str
    """Model of the LLM rows that name none (Table 5's do): gpt-4-1106-preview at paper
    scale, the bundled local model where replies must be recordable offline."""
    llm_world_rules: str
    """World rules of designed Crafter environments (`RunConfig.llm_world_rules`): "authors",
    the fork GPT-4's settings were generated in, or "stock"."""
    original_world: str
    """World rules of the original game (`RunConfig.original_world`): "stock" or "authors"."""
    games: tuple[tuple[str, tuple[tuple[str, Any], ...]], ...] = ()
    """Per game other than Crafter: its `GAME_FIELDS` as sorted (name, value) pairs."""
    deterministic: bool = False
    """Deterministic GPU kernels, TF32 off (`set_deterministic`); no effect on the CPU."""
    bf16_autocast: bool = False
    """Forward passes under bfloat16 autocast (GPU speed; other numbers, other hashes)."""
    channels_last: bool = False
    """Convolutions in NHWC layout (GPU speed; other run hashes)."""
    llm_temperature: float = 0.0
    """Sampling temperature of LLM rows that set none (`RunConfig.llm_temperature`; paper: 0)."""
    llm_redraw_repeats: bool = False
    """Redraw an initial reply whose worlds repeat, in LLM rows that set none (not in the
    paper; `RunConfig.llm_redraw_repeats`)."""
    cohort: int = 1
    """Seeds trained as one batched model (`RunConfig.cohort`) in the rows that may
    (original_only PPO in Crafter); 1 = every run alone."""
    cohort_groups: int = 1
    """Groups those cohorts pipeline in, one collecting while another updates
    (`RunConfig.cohort_groups`); 1 = not pipelined."""
    cohort_kernels: str = "eager"
    """How those cohorts run their update: eager, graph or compile (`RunConfig.cohort_kernels`)."""
    cpu_numerics: str = "native"
    """CPU numerics of rows that set none: native or portable (`RunConfig.cpu_numerics`)."""
    game: str = "crafter"
    """The game whose rows this profile budgets (`for_game` sets it)."""

    def __post_init__(self) -> None:
        where = self.where
        finite(self.step_scale, f"{where}.step_scale")
        if self.step_scale <= 0:
            raise ConfigError(f"{where}.step_scale", "must be > 0 (1.0 = paper)")
        check_history_cycles(self.llm_history_cycles, f"{where}.llm_history_cycles")
        check_temperature(self.llm_temperature, f"{where}.llm_temperature")
        if type(self.cohort) is not int or not 1 <= self.cohort <= 64:
            raise ConfigError(f"{where}.cohort", "a whole number in 1..64 (1: runs alone)")
        check_mode(self.cpu_numerics, f"{where}.cpu_numerics")
        if self.cpu_numerics == PORTABLE and self.device != "cpu":
            raise ConfigError(f"{where}.cpu_numerics", "portable is a CPU mode; set device: cpu")
        for name in (
            "min_rollouts",
            "eval_episodes",
            "validation_steps",
            "random_episodes",
            "torch_threads",
        ):
            if getattr(self, name) < 1:
                raise ConfigError(f"{where}.{name}", "must be a positive integer")
        for name in ("seeds", "initial_sets"):
            values = getattr(self, name)
            if not values or min(values) < 0 or len(set(values)) != len(values):
                raise ConfigError(
                    f"{where}.{name}", "give a non-empty list of distinct non-negative integers"
                )
            at_most(max(values), 2**31 - 1, f"{where}.{name}", "a 31-bit seed")
            at_most(len(values), MAX_COUNT, f"{where}.{name}", "runs per row")
        for name in ("llm_world_rules", "original_world"):
            if getattr(self, name) not in WORLD_RULES:
                raise ConfigError(f"{where}.{name}", f"allowed: {', '.join(WORLD_RULES)}")
        if self.device != "cpu" and not re.fullmatch(r"cuda(:\d+)?", self.device):
            raise ConfigError(f"{where}.device", f"{self.device!r}; use cpu or cuda (cuda:N)")
        model_preset(self.model)
        try:  # these name a field without the profile's `where`, added here
            check_cohort(self.cohort, self.cohort_groups, self.cohort_kernels)
            ppo = PPOOverrides(self.ppo)  # a bad key or type, named
            object.__setattr__(self, "ppo", ppo)
            game_spec(self.game).ppo_config(ppo)  # e.g. minibatches vs the rollout size
        except ConfigError as exc:
            if exc.path.startswith(where):
                raise
            raise ConfigError(f"{where}.{exc.path}", exc.message) from None
        self._check_sizes()
        for game, _ in self.games:
            self.for_game(game)

    def _check_sizes(self) -> None:
        """Every count bounded (`envgen.input_checks`) and, for Crafter, a scored phase long
        enough to finish episodes: checked here, before DVC removes any output."""
        where = self.where
        steps = "env steps of one phase"
        if self.min_rollouts * self.rollout_size > MAX_STEPS:
            raise ConfigError(
                f"{where}.min_rollouts",
                f"{self.min_rollouts:,} rollouts of {self.rollout_size:,} steps are more than "
                f"{MAX_STEPS:,} env steps, the most one phase may ask for",
            )
        if self.steps(LARGEST_PAPER_STEPS) > MAX_STEPS:
            raise ConfigError(
                f"{where}.step_scale",
                f"{self.step_scale!r} scales the paper's largest phase (25M steps) to "
                f"{self.steps(LARGEST_PAPER_STEPS):,}, more than {MAX_STEPS:,} env steps",
            )
        at_most(self.validation_steps, MAX_STEPS, f"{where}.validation_steps", steps)
        for name in ("eval_episodes", "random_episodes", "llm_history_cycles"):
            if getattr(self, name) != AUTO:
                at_most(getattr(self, name), MAX_COUNT, f"{where}.{name}", "repetitions")
        at_most(self.torch_threads, 1024, f"{where}.torch_threads", "threads per run")
        if game_spec(self.game).rules.scored_in_training:
            final = self.steps(RunConfig().final_steps)
            check_scored_phase(final, self.ppo_config.num_envs, f"{where}.step_scale", "step_scale")

    @property
    def where(self) -> str:
        """Where this profile's values sit in params.yaml (for error messages)."""
        base = f"profiles.{self.name}"
        return base if game_spec(self.game).rules.base else f"{base}.games.{self.game}"

    @property
    def ppo_config(self) -> PPOConfig:
        """The game's PPO defaults with this profile's overrides applied."""
        return game_spec(self.game).ppo_config(self.ppo)

    @property
    def rollout_size(self) -> int:
        """Env steps per PPO rollout of this profile's game (Heist: 64 x 256 by default)."""
        return self.ppo_config.rollout_size

    def for_game(self, game: str) -> Profile:
        """This profile as it budgets `game`'s rows: Crafter's is the profile itself."""
        if game == self.game:
            return self
        sections = dict(self.games)
        if game not in sections:
            raise ConfigError(
                f"profiles.{self.name}.games.{game}",
                f"missing; a profile that runs {game} rows sets {', '.join(GAME_FIELDS)} "
                "for them (see params.yaml's smoke profile)",
            )
        return dataclasses.replace(self, game=game, games=(), **dict(sections[game]))

    def steps(self, paper_steps: int) -> int:
        """A paper step count under this profile; zero stays zero."""
        if paper_steps == 0:
            return 0
        scaled = paper_steps * self.step_scale
        if not self.round_to_rollouts:
            return int(round(scaled))
        rollouts = max(self.min_rollouts, int(round(scaled / self.rollout_size)))
        return rollouts * self.rollout_size

    def apply(self, config: RunConfig, initial_set: int, own: Collection[str] = ()) -> RunConfig:
        """`config` (paper units) as this profile runs it for one initial set: the step
        scale, network (a row's own too), PPO overrides and evaluation size of the config's
        game (`for_game`). `own`: the fields the row sets; of the LLM settings, world rules,
        history bound and CPU numerics, a row's own value wins (any value: 0 may be meant)."""
        budget = self.for_game(config.game)
        changes: dict[str, Any] = {
            name: budget.steps(getattr(config, name)) for name in STEP_FIELDS
        }
        changes.update(
            initial_set=initial_set if config.uses_designer else 0,
            model=budget.model,
            bf16_autocast=self.bf16_autocast,
            channels_last=self.channels_last,
            ppo=budget.ppo,
            eval_episodes=budget.eval_episodes,
            validation_steps=self.validation_steps,
        )
        from_profile = ["llm_history_cycles", "cpu_numerics"]  # unless the row sets its own
        if config.uses_llm:
            from_profile += ["llm_model", "llm_temperature", "llm_redraw_repeats"]
        if game_spec(config.game).rules.world_rules:
            from_profile += ["llm_world_rules", "original_world"]
        changes.update({name: getattr(self, name) for name in from_profile if name not in own})
        applied = config.replace(**changes)
        if self.cohort > 1 and applied.cohort_eligible and "cohort" not in own:
            applied = applied.replace(
                cohort=self.cohort,
                cohort_groups=self.cohort_groups,
                cohort_kernels=self.cohort_kernels,
            )
        return applied


# Fields a profile may leave out: those with a default (off, 0 or 1), but `games`.
OPTIONAL_FIELDS = frozenset(
    f.name for f in dataclasses.fields(Profile) if f.default is not dataclasses.MISSING
) - {"games", "game"}


def load_profile(params: Mapping[str, Any], name: str | None = None) -> Profile:
    """The profile `name` (default: params["profile"]) from a params.yaml mapping."""
    profiles = params.get("profiles") or {}
    if not isinstance(profiles, Mapping):
        raise ConfigError("profiles", "must be a mapping of profile name: its fields")
    name = name or params.get("profile")
    if not name:
        raise ConfigError("profile", "params.yaml needs `profile: NAME` (e.g. smoke)")
    if not isinstance(name, str) or name not in profiles:
        raise ConfigError(
            "profile", f"{name!r} is not under `profiles:`; choose one of {', '.join(profiles)}"
        )
    if not isinstance(profiles[name], Mapping):
        raise ConfigError(f"profiles.{name}", "must be a mapping of field: value")
    data = dict(profiles[name])
    fields = {f.name for f in dataclasses.fields(Profile)} - {"name", "game"}
    unknown = sorted(set(data) - fields)
    if unknown:
        raise unknown_key(f"profiles.{name}.{unknown[0]}", unknown[0], fields)
    missing = sorted(fields - set(data) - OPTIONAL_FIELDS)
    if missing:
        raise ConfigError(f"profiles.{name}.{missing[0]}", "missing; every profile sets it")
    check_types(Profile, data, f"profiles.{name}.")
    if data["games"] is not None and not isinstance(data["games"], Mapping):
        raise ConfigError(f"profiles.{name}.games", "must be a mapping of game: its section")
    data = _typed(data, f"profiles.{name}")
    data["games"] = tuple(
        (game, _game_section(section, f"profiles.{name}.games.{game}", game))
        for game, section in sorted(dict(data["games"] or {}).items())
    )
    return Profile(name=name, **data)


def _typed(data: dict[str, Any], where: str) -> dict[str, Any]:
    """Lists and mappings of a profile (or game section) at `where` as hashable tuples."""
    for key in ("seeds", "initial_sets"):
        if key in data:
            data[key] = tuple(data[key])
    if "ppo" in data:
        data["ppo"] = PPOOverrides(data["ppo"], f"{where}.ppo")
    return data


def _game_section(section: Any, where: str, game: str) -> tuple[tuple[str, Any], ...]:
    """One `games.<game>` section, its keys checked, as sorted (name, value) pairs."""
    if game not in GAMES or GAMES[game].rules.base:
        others = ", ".join(g for g, spec in GAMES.items() if not spec.rules.base)
        raise ConfigError(
            where,
            f"not a game with its own section; Crafter's budget is the profile's own, "
            f"sections exist for: {others}",
        )
    if not isinstance(section, Mapping):
        raise ConfigError(where, f"must be a mapping that sets {', '.join(GAME_FIELDS)}")
    data = dict(section)
    unknown = sorted(set(data) - set(GAME_FIELDS))
    if unknown:
        raise unknown_key(f"{where}.{unknown[0]}", unknown[0], GAME_FIELDS)
    missing = [key for key in GAME_FIELDS if key not in data]
    if missing:
        raise ConfigError(
            f"{where}.{missing[0]}",
            "missing; a game section sets every one of " + ", ".join(GAME_FIELDS),
        )
    check_types(Profile, data, f"{where}.")
    return tuple(sorted(_typed(data, where).items()))
