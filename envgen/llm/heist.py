"""Heist as the LLM designer sees it: prompts and the reply schema.

The paper gives no Heist prompt (docs/paper.md, "What the paper does not say"); this one
follows the Crafter prompt's four parts. Names, allowed values and limits come from
`envgen.envs.heist.config`; the notes are this project's prose (docs/heist.md).
"""

from __future__ import annotations

from typing import Any

from envgen.envs.heist.config import (
    MAX_COLOURS,
    MAX_MAZE,
    MIN_MAZE,
    MODES,
    RANDOM,
    HeistConfig,
    max_colours,
)
from envgen.llm import prompt_parts, schema
from envgen.llm.names import NameMap, obfuscated_names

EPISODE_STEPS = 1000  # procgen's Heist timeout; Heist has no episode-length setting

# The skills, each with what it means; keys are the names of `success_stats`.
SKILLS = {
    "collect_keys": "find and pick up the keys",
    "open_doors": "open each locked door with the key of its colour, in the chain's order",
    "steal_gem": "reach and touch the gem (the goal: reward 10, the episode ends)",
}

ENV_FIELDS = ("distribution_mode", "maze_size", "num_keys")
INVENTORY_FIELDS = ("keys_held",)

PARAMETER_NOTES = {
    "distribution_mode": "procgen's level family: easy levels are small, hard levels "
    "can be larger; the agent is tested on easy levels",
    "maze_size": "side of the square maze in cells (larger = longer paths)",
    "num_keys": "number of key colours; each colour has one key and one locked door",
    "keys_held": "keys the agent holds at the start, the first ones of the chain; their "
    "doors still stand but open at a touch",
}

GAME_RULES = (
    "Keys and doors form a chain: the first key lies where the agent starts, each "
    "further key lies behind the door of the previous colour, and the gem lies behind "
    "the last door.",
    "A door opens when the agent touches it while holding the key of its colour.",
    "With 0 keys there are no doors: the agent only has to find the gem.",
    f"An episode ends when the gem is stolen or after {EPISODE_STEPS} steps.",
)


class HeistReplyConfig:
    """`HeistConfig.from_dict` under the designer's `from_dict(data, *, default_length,
    path)` contract; Heist has no episode-length setting, so the length is unused."""

    @staticmethod
    def from_dict(data: Any, *, default_length: int, path: str = "") -> HeistConfig:
        return HeistConfig.from_dict(data, path=path)


def skills() -> tuple[str, ...]:
    """The skills the agent must learn, in the order of the chain."""
    return tuple(SKILLS)


def name_map(obfuscate: bool) -> NameMap:
    """Real names, or parameter1..3 / optionA.. / item1 as in the Crafter ablation."""
    return obfuscated_names(ENV_FIELDS, MODES, INVENTORY_FIELDS) if obfuscate else NameMap({})


def _sizes(mode: str | None = None) -> list[int]:
    top = max(MAX_MAZE.values()) if mode is None else MAX_MAZE[mode]
    return list(range(MIN_MAZE, top + 1, 2))


def environment_schema(names: NameMap) -> dict[str, Any]:
    """JSON schema of one environment as the LLM writes it (every field required)."""
    env_props = {
        names.show("distribution_mode"): {"type": "string", "enum": [names.show(m) for m in MODES]},
        names.show("maze_size"): {"type": "integer", "enum": _sizes()},
        names.show("num_keys"): {"type": "integer", "enum": list(range(MAX_COLOURS + 1))},
    }
    inv_props = {names.show("keys_held"): {"type": "integer", "enum": list(range(MAX_COLOURS + 1))}}
    return schema.environment_schema(env_props, inv_props)


def _task() -> str:
    skill_lines = "\n".join(f"- {name}: {what}" for name, what in SKILLS.items())
    return (
        "You design training environments for a reinforcement-learning agent that "
        "plays Heist, a 2D maze game of the Procgen benchmark: the agent must steal "
        "a gem, collecting keys and opening the locked doors in colour order on the "
        "way. After training, the agent is tested in the original game (random "
        "easy levels), where it should steal the gem as often as possible. "
        f"The skills it needs:\n{skill_lines}"
    )


def _note(names: NameMap, field: str) -> str:
    return "" if not names.is_identity else f" - {PARAMETER_NOTES[field]}"


def _parameters_section(names: NameMap) -> str:
    default = HeistConfig()
    show = names.show
    sizes = "; ".join(f"{', '.join(map(str, _sizes(mode)))} in {show(mode)} mode" for mode in MODES)
    caps = ", ".join(
        f"size {size}{' and larger' if max_colours(size) == MAX_COLOURS else ''}: "
        f"at most {max_colours(size)}"
        for size in _sizes()
        if size == MIN_MAZE or max_colours(size) > max_colours(size - 2)
    )
    return "\n".join(
        (
            "Parameters of an environment (leave one out to keep its default):",
            '"environment_settings":',
            f"- {show('distribution_mode')}: one of {', '.join(show(m) for m in MODES)} "
            f"(default {show(default.distribution_mode)}){_note(names, 'distribution_mode')}",
            f'- {show("maze_size")}: {sizes}, or "{RANDOM}" (default "{RANDOM}": the '
            f"game's own choice){_note(names, 'maze_size')}",
            f'- {show("num_keys")}: integer 0-{MAX_COLOURS}, or "{RANDOM}" (default '
            f'"{RANDOM}"); a maze holds only so many colours ({caps})'
            f"{_note(names, 'num_keys')}",
            '"inventory_settings":',
            f"- {show('keys_held')}: integer 0-{MAX_COLOURS}, at most {show('num_keys')} "
            f"(default {default.keys_held}){_note(names, 'keys_held')}",
            "Numbers outside their range are clamped to it.",
        )
    )


PROMPTS = prompt_parts.GamePrompts(
    task=_task,
    skills=skills,
    parameters=_parameters_section,
    rules=GAME_RULES,
    hard="hard to learn",
    example=HeistConfig(purpose="which skills this environment trains"),
    measured="tested",
    runs="test runs",
)
