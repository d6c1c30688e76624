"""What the LLM designer needs to know of a game: one `DesignSpec` per game.

The specs live here, beside the prompts they name; the game registry `envgen.games.GAMES`
points its `design` field at them, so this package needs nothing above it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from types import ModuleType
from typing import Any

from envgen.envs.crafter.config import LLM_ENV_LENGTH, CrafterConfig
from envgen.errors import ConfigError
from envgen.llm import crafter as crafter_prompts
from envgen.llm import heist as heist_prompts
from envgen.llm.names import NameMap
from envgen.llm.prompt_parts import GamePrompts


@dataclasses.dataclass(frozen=True)
class DesignSpec:
    """Everything game-specific about designing training worlds with an LLM."""

    config_cls: Any
    """Class whose `from_dict(data, *, default_length, path)` validates one world."""
    default_length: int
    """Episode length of LLM-designed worlds when the reply names none."""
    skills: Callable[[], tuple[str, ...]]
    """The skills the agent must learn (the keys of `success_stats`)."""
    name_map: Callable[[bool], NameMap]
    """Names shown to the LLM: real (False) or obfuscated (True)."""
    environment_schema: Callable[[NameMap], dict[str, Any]]
    """JSON schema of one environment in the reply, for structured output."""
    prompts: GamePrompts
    """The game's prompts, in its own words (envgen.llm.prompt_parts)."""


def _spec(prompts: ModuleType, config_cls: Any, default_length: int) -> DesignSpec:
    """A game's spec from its prompts module (envgen/llm/crafter.py, heist.py)."""
    return DesignSpec(
        config_cls,
        default_length,
        prompts.skills,
        prompts.name_map,
        prompts.environment_schema,
        prompts.PROMPTS,
    )


DESIGN_SPECS: dict[str, DesignSpec] = {
    "crafter": _spec(crafter_prompts, CrafterConfig, LLM_ENV_LENGTH),
    "heist": _spec(heist_prompts, heist_prompts.HeistReplyConfig, heist_prompts.EPISODE_STEPS),
}


def design_spec(game: str) -> DesignSpec:
    """The game's design spec, or a ConfigError listing the known games."""
    if game not in DESIGN_SPECS:
        raise ConfigError("game", f"unknown game {game!r}; known: {', '.join(DESIGN_SPECS)}")
    return DESIGN_SPECS[game]
