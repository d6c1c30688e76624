"""The one game registry: game name -> what training, scoring and the LLM designer need.

`RunConfig.game` names an entry; a run builds its network, PPO settings, vec env,
episode logs and evaluations from it, the LLM designer its prompts, reply schema and
skills (`design`). Each game's own code lives beside its engine (envgen/envs) and its
prompts in envgen/llm. Heist's PPO defaults are CleanRL's `ppo_procgen.py` (docs/heist.md,
"PPO for Heist", lists them and what differs).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from envgen.agents.config import ModelConfig, PPOConfig, PPOOverrides, model_preset
from envgen.agents.runlog import episode_record, heist_episode_record
from envgen.envs.crafter.config import CrafterConfig
from envgen.envs.game_rules import GAME_RULES, GameRules
from envgen.envs.heist import metrics as heist_metrics
from envgen.envs.heist.config import HeistConfig
from envgen.envs.heist.engine import NUM_ACTIONS as HEIST_ACTIONS
from envgen.envs.heist.env import vec_env_factory as heist_vec_env_factory
from envgen.errors import ConfigError
from envgen.llm.design_spec import DESIGN_SPECS, DesignSpec
from envgen.scoring import summarize as crafter_summary

if TYPE_CHECKING:
    from envgen.agents.networks import ActorCritic
    from envgen.agents.trainer import EnvFactory, EpisodeRecord, Summarize

# (model, seed, episodes per run, device, workers, original config, runs) -> the agent in the
# original game without updates: {"feedback": {skill: [mean %, std %]}, "success_mean": ...}.
Evaluate = Callable[["ActorCritic", int, int, str, int | None, Any, int], dict[str, Any]]

HEIST_CHECKPOINT_EVERY = 1_048_576  # 64 rollouts of 64 x 256; see docs/heist.md


# Training and evaluation load torch, which reading profiles, plans and finished runs
# never needs (tests/test_lazy_imports.py): each is imported when first called, from
# module-level functions (not closures) so that a `GameSpec` pickles and compares by value.
def _crafter_vec_env_factory(workers: int | None) -> EnvFactory:
    from envgen.agents.trainer import crafter_vec_env_factory  # lazy: torch (see above)

    return crafter_vec_env_factory(workers)


def _crafter_evaluate(*args: Any) -> dict[str, Any]:
    from envgen.agents.evaluate import crafter_evaluate  # lazy: torch (see above)

    return crafter_evaluate(*args)


def _heist_evaluate(*args: Any) -> dict[str, Any]:
    from envgen.agents.heist_evaluate import evaluate  # lazy: torch (see above)

    return evaluate(*args)


@dataclasses.dataclass(frozen=True)
class GameSpec:
    """Everything game-specific about training, scoring and designing worlds for an agent."""

    name: str
    """Registry key (`RunConfig.game`)."""
    original: Any
    """Config of the original game: its training phases and its tests."""
    num_actions: int
    """Size of the policy head."""
    ppo_defaults: PPOOverrides
    """`PPOConfig` fields set for this game before a run's own `ppo` overrides."""
    vec_env_factory: Callable[[int | None], EnvFactory]
    """(workers) -> the trainer's vec-env factory; workers never change results."""
    episode_record: EpisodeRecord
    """(episode info, global step, phase) -> the episode log's line."""
    summarize: Summarize
    """Logged episodes -> summary whose "score" is the game's table number (percent)."""
    evaluate: Evaluate
    """Per-skill success in the original game, for the adaptation prompt."""
    design: DesignSpec
    """What the LLM designer needs: world config class, prompts, schema, skills."""
    rules: GameRules
    """What the rest of the package does differently for it (`envgen.envs.game_rules`)."""

    def ppo_config(self, overrides: PPOOverrides | Mapping[str, Any] = ()) -> PPOConfig:
        """Table 9's `PPOConfig` with this game's defaults, then a run's `ppo` `overrides`."""
        return PPOOverrides(overrides).apply(self.ppo_defaults)

    def model_config(
        self, preset: str, *, bf16_autocast: bool = False, channels_last: bool = False
    ) -> ModelConfig:
        """The named network preset with this game's action count and the GPU options
        (`RunConfig.gpu_options`; only these two, so no option reshapes the network)."""
        return dataclasses.replace(
            model_preset(preset),
            num_actions=self.num_actions,
            bf16_autocast=bf16_autocast,
            channels_last=channels_last,
        )


GAMES: dict[str, GameSpec] = {
    "crafter": GameSpec(
        name="crafter",
        original=CrafterConfig(),
        num_actions=ModelConfig().num_actions,
        ppo_defaults=PPOOverrides(),
        vec_env_factory=_crafter_vec_env_factory,
        episode_record=episode_record,
        summarize=crafter_summary,
        evaluate=_crafter_evaluate,
        design=DESIGN_SPECS["crafter"],
        rules=GAME_RULES["crafter"],
    ),
    "heist": GameSpec(
        name="heist",
        original=HeistConfig(),
        num_actions=HEIST_ACTIONS,
        ppo_defaults=PPOOverrides(
            {
                "gamma": 0.999,
                "gae_lambda": 0.95,
                "num_envs": 64,
                "num_steps": 256,
                "epochs": 3,
                "minibatches": 8,
                "clip": 0.2,
                "ent_coef": 0.01,
                "vf_coef": 0.5,
                "lr": 5e-4,
                "max_grad_norm": 0.5,
                "checkpoint_every": HEIST_CHECKPOINT_EVERY,
            }
        ),
        vec_env_factory=heist_vec_env_factory,
        episode_record=heist_episode_record,
        summarize=heist_metrics.summary,
        evaluate=_heist_evaluate,
        design=DESIGN_SPECS["heist"],
        rules=GAME_RULES["heist"],
    ),
}


def game_spec(name: str) -> GameSpec:
    """The registered game, or a ConfigError listing the known ones."""
    if name not in GAMES:
        raise ConfigError("game", f"unknown game {name!r}; known: {', '.join(GAMES)}")
    return GAMES[name]
