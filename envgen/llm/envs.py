"""Explicit registry: environment family -> what the LLM designer needs to know of it.

A family brings its config class (with the `from_dict(data, *, default_length, path)`
contract of `CrafterConfig`), the episode length of LLM environments, its skills,
prompts, reply schema and obfuscation names.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from envgen.envs.crafter.config import LLM_ENV_LENGTH, CrafterConfig
from envgen.errors import ConfigError
from envgen.llm import crafter, heist
from envgen.llm.names import NameMap


@dataclasses.dataclass(frozen=True)
class EnvSpec:
    """Everything environment-specific about designing environments with an LLM."""

    config_cls: Any
    """Class whose `from_dict(data, *, default_length, path)` validates one environment."""
    default_length: int
    """Episode length of LLM environments when the reply names none."""
    skills: Callable[[], tuple[str, ...]]
    """The skills the agent must learn (the keys of `success_stats`)."""
    name_map: Callable[[bool], NameMap]
    """Names shown to the LLM: real (False) or obfuscated (True)."""
    environment_schema: Callable[[NameMap], dict[str, Any]]
    """JSON schema of one environment in the reply, for structured output."""
    initial_prompt: Callable[[int, NameMap, bool], str]
    """(n, names, structured) -> the first user message."""
    adaptation_prompt: Callable[
        [Sequence[Any], Mapping[str, tuple[float, float]], int, NameMap, bool], str
    ]
    """(previous configs, success_stats, n, names, structured) -> a feedback message."""


ENVIRONMENTS: dict[str, EnvSpec] = {
    "crafter": EnvSpec(
        config_cls=CrafterConfig,
        default_length=LLM_ENV_LENGTH,
        skills=crafter.skills,
        name_map=crafter.name_map,
        environment_schema=crafter.environment_schema,
        initial_prompt=crafter.initial_prompt,
        adaptation_prompt=crafter.adaptation_prompt,
    ),
    "heist": EnvSpec(
        config_cls=heist.HeistReplyConfig,
        default_length=heist.EPISODE_STEPS,
        skills=heist.skills,
        name_map=heist.name_map,
        environment_schema=heist.environment_schema,
        initial_prompt=heist.initial_prompt,
        adaptation_prompt=heist.adaptation_prompt,
    ),
}


def env_spec(env: str) -> EnvSpec:
    """The registered family, or a ConfigError listing the known ones."""
    try:
        return ENVIRONMENTS[env]
    except KeyError:
        raise ConfigError(
            "env", f"unknown environment family {env!r}; known: {', '.join(ENVIRONMENTS)}"
        ) from None
