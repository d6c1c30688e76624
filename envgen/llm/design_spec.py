"""What the LLM designer needs to know of a game: one `DesignSpec` per game.

The specs live in the one game registry, `envgen.games.GAMES` (field `design`), beside
what training and scoring need of the same game. A game brings its config class (with
the `from_dict(data, *, default_length, path)` contract of `CrafterConfig`), the episode
length of LLM-designed worlds, its skills, prompts, reply schema and obfuscation names.
The prompts follow the authors' conversation (envgen.llm.conversation): an initial
request, a self-contained first adaptation, then short results messages.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from envgen.llm.names import NameMap


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
    initial_prompt: Callable[[int, NameMap, bool], str]
    """(n, names, structured) -> the first user message."""
    adaptation_prompt: Callable[
        [Sequence[Any], Mapping[str, tuple[float, float]], int, NameMap, bool], str
    ]
    """(previous configs, success_stats, n, names, structured) -> the worlds just trained
    in, their outcome and the request for new ones: the body of the first adaptation."""
    briefing: Callable[[NameMap], str]
    """names -> the task, skills, parameters and rules that open a self-contained request
    (the initial prompt and the first adaptation)."""
    results_prompt: Callable[[Mapping[str, tuple[float, float]], int, NameMap, bool], str]
    """(success_stats, n, names, structured) -> a later adaptation's message: the outcome
    of the worlds in the reply just before it."""


def design_spec(game: str) -> DesignSpec:
    """The registered game's design spec, or a ConfigError listing the known games.

    Imported late: `envgen.games` imports this package's prompt modules, so a top-level
    import here would be circular.
    """
    from envgen.games import game_spec

    return game_spec(game).design
