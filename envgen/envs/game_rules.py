"""What the package does differently per game outside the game's own code, as plain facts.

The game registry's entries (`envgen.games.GAMES`) point their `rules` here; the run
config, the report's inputs and design quality read them here, so that they need neither
torch nor the training code the registry brings.
"""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class GameRules:
    """Each field is False for a game that does not say otherwise."""

    base: bool = False
    """The paper's main game (Tables 1-7): a profile's own budget (another game's is its
    `games.<name>` section), listed first and unprefixed in reports; the curricula, the
    non-LLM designers and design quality's skill measure work on its worlds only."""
    scored_in_training: bool = False
    """Scored by the final phase's training episodes, with their achievements (else by
    testing the final agent: test_episodes.jsonl), so that phase must finish episodes."""
    world_rules: bool = False
    """Its worlds take Crafter's world rules (`llm_world_rules`, `original_world`)."""
    cohorts: bool = False
    """Seeds may train as one cohort (`envgen.agents.cohort_trainer`'s vec env)."""
    env_workers: bool = False
    """Its vec env's worker count follows `$ENVGEN_ENV_WORKERS` (`workers_variable`)."""


GAME_RULES: dict[str, GameRules] = {
    "crafter": GameRules(
        base=True, scored_in_training=True, world_rules=True, cohorts=True, env_workers=True
    ),
    "heist": GameRules(),
}
