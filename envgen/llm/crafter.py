"""Crafter as the LLM designer sees it: prompts and the reply schema.

Written from docs/paper.md ("The method in four steps", "Crafter parameters the LLM
controls"); names and allowed values come from the game and `envgen.envs.crafter.config`,
never retyped; only the explanatory notes are this project's prose.
"""

from __future__ import annotations

import functools
from typing import Any

import crafter.constants

from envgen.envs.crafter.config import (
    BIOMES,
    ENV_FIELDS,
    IMPLIED_TOOLS,
    INVENTORY_MAX,
    RARITIES,
    CrafterConfig,
)
from envgen.llm import prompt_parts, schema
from envgen.llm.names import NameMap, obfuscated_names

# What each parameter does, in words; omitted from the obfuscated prompt (it would
# give the names away). Keys must equal ENV_FIELDS (checked by the tests).
PARAMETER_NOTES = {
    "target_biome": 'the biome most of the world is made of; "natural" is the original '
    "mix of all biomes",
    "coal_rarity": "how often coal appears",
    "iron_rarity": "how often iron appears",
    "diamond_rarity": "how often diamonds appear",
    "tree_rarity": "how often trees appear",
}

# The game rules the prompt states (docs/paper.md, "Prompt constraints").
GAME_RULES = (
    "Coal, iron and diamonds appear only in mountains (caves, tunnels).",
    "Trees and cows appear only in grassland.",
    "Skeletons live only in mountains and shoot arrows at the agent.",
    "Zombies can appear anywhere and chase the agent.",
    "The agent can drink only from water.",
    "Collecting stone needs a wood pickaxe, iron needs a stone pickaxe and diamonds "
    "need an iron pickaxe.",
    "Crafting needs a table nearby; iron tools also need a furnace nearby.",
    'The skill "wake_up" needs the agent to sleep first; a sleeping agent cannot move '
    "and is woken by monsters or by sunrise.",
)


@functools.cache
def skills() -> tuple[str, ...]:
    """The 22 achievements, in the game's own order and spelling."""
    return tuple(crafter.constants.achievements)


def name_map(obfuscate: bool) -> NameMap:
    """Real names, or the paper's parameter1..5 / optionA..G / item1..12."""
    if not obfuscate:
        return NameMap({})
    return obfuscated_names(ENV_FIELDS, (*BIOMES, *RARITIES), INVENTORY_MAX)


def environment_schema(names: NameMap) -> dict[str, Any]:
    """JSON schema of one environment as the LLM writes it (every field required)."""
    env_props = {
        names.show(field): {"type": "string", "enum": [names.show(v) for v in allowed]}
        for field, allowed in ENV_FIELDS.items()
    }
    inv_props = {
        names.show(item): {"type": "integer", "enum": list(range(hi + 1))}
        for item, hi in INVENTORY_MAX.items()
    }
    return schema.environment_schema(env_props, inv_props)


def _task() -> str:
    skill_lines = "\n".join(f"- {s}" for s in skills())
    return (
        "You design training environments for a reinforcement-learning agent that "
        "plays Crafter, an open-world 2D survival game. After training, the agent is "
        "tested in the original game, where it should achieve as many of these "
        f"{len(skills())} skills as possible:\n{skill_lines}"
    )


def _parameters_section(names: NameMap) -> str:
    default = CrafterConfig()
    lines = ["Parameters of an environment (leave one out to keep its default):"]
    lines.append('"environment_settings":')
    for field, allowed in ENV_FIELDS.items():
        note = "" if not names.is_identity else f" - {PARAMETER_NOTES[field]}"
        options = ", ".join(names.show(v) for v in allowed)
        shown_default = names.show(getattr(default, field))
        lines.append(f"- {names.show(field)}: one of {options} (default {shown_default}){note}")
    lines.append('"inventory_settings" (what the agent holds at the start; default 0):')
    for item, hi in INVENTORY_MAX.items():
        lines.append(f"- {names.show(item)}: integer 0-{hi}")
    for material, tool in IMPLIED_TOOLS.items():
        lines.append(f"Starting with any {names.show(material)} also gives {names.show(tool)} = 1.")
    lines.append("Numbers outside their range are clamped to it.")
    return "\n".join(lines)


PROMPTS = prompt_parts.GamePrompts(
    task=_task,
    skills=skills,
    parameters=_parameters_section,
    rules=GAME_RULES,
    hard="hard to reach",
    example=CrafterConfig(purpose="which skills this environment trains"),
    measured="evaluated",
    runs="evaluation runs",
    inventory_note=" (every item with its count)",
    code_block_note=" (list only the items the agent should start with)",
)
