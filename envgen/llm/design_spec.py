"""What the LLM designer needs to know of a game: one `DesignSpec` per game.

A game brings its config class (with the `from_dict(data, *, default_length, path)`
contract of `CrafterConfig`), the episode length of LLM-designed worlds, its skills,
prompts, reply schema and obfuscation names. The specs live here, beside the prompts
they name; the game registry `envgen.games.GAMES` points its `design` field at them, so
this package needs nothing above it.
The prompts follow the authors' conversation (envgen.llm.conversation): an initial
request, a self-contained first adaptation, then short results messages.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
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
    """The initial request, the self-contained first adaptation (briefing and body) and
    the later results messages, in the game's words (envgen.llm.prompt_parts)."""


DESIGN_SPECS: dict[str, DesignSpec] = {
    "crafter": DesignSpec(
        config_cls=CrafterConfig,
        default_length=LLM_ENV_LENGTH,
        skills=crafter_prompts.skills,
        name_map=crafter_prompts.name_map,
        environment_schema=crafter_prompts.environment_schema,
        prompts=crafter_prompts.PROMPTS,
    ),
    "heist": DesignSpec(
        config_cls=heist_prompts.HeistReplyConfig,
        default_length=heist_prompts.EPISODE_STEPS,
        skills=heist_prompts.skills,
        name_map=heist_prompts.name_map,
        environment_schema=heist_prompts.environment_schema,
        prompts=heist_prompts.PROMPTS,
    ),
}


def design_spec(game: str) -> DesignSpec:
    """The game's design spec, or a ConfigError listing the known games."""
    if game not in DESIGN_SPECS:
        raise ConfigError("game", f"unknown game {game!r}; known: {', '.join(DESIGN_SPECS)}")
    return DESIGN_SPECS[game]
