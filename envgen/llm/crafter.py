"""Crafter as the LLM designer sees it: prompts and the reply schema.

Written from the facts in docs/paper.md ("The method in four steps", "Crafter
parameters the LLM controls"). Names and allowed values come from the game
(`crafter.constants.achievements`) and from `envgen.envs.crafter.config`, never
retyped; only the explanatory notes below are prose of this project.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping, Sequence
from typing import Any

from envgen.envs.crafter.config import (
    BIOMES,
    ENV_FIELDS,
    IMPLIED_TOOLS,
    INVENTORY_MAX,
    RARITIES,
    CrafterConfig,
)
from envgen.errors import ConfigError
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
    import crafter.constants  # imported late: loading crafter takes a fraction of a second

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
    return {
        "type": "object",
        "properties": {
            "purpose": {"type": "string", "maxLength": 200},
            "environment_settings": _closed_object(env_props),
            "inventory_settings": _closed_object(inv_props),
        },
        "required": ["purpose", "environment_settings", "inventory_settings"],
        "additionalProperties": False,
    }


def initial_prompt(n: int, names: NameMap, structured: bool) -> str:
    """Step 1 of the method: task, skills, parameters, rules and the output format."""
    skill_lines = "\n".join(f"- {s}" for s in skills())
    return "\n\n".join(
        (
            "You design training environments for a reinforcement-learning agent that "
            "plays Crafter, an open-world 2D survival game. After training, the agent is "
            "tested in the original game, where it should achieve as many of these "
            f"{len(skills())} skills as possible:\n{skill_lines}",
            _parameters_section(names),
            "Game rules to respect:\n" + "\n".join(f"- {r}" for r in GAME_RULES),
            f"Create {n} environments in which the agent can practise the skills it needs, "
            "especially those that are hard to reach in the original game.",
            _format_section(n, names, structured),
        )
    )


def adaptation_prompt(
    previous: Sequence[CrafterConfig],
    success_stats: Mapping[str, tuple[float, float]],
    n: int,
    names: NameMap,
    structured: bool,
) -> str:
    """Step 4: the previous environments and each skill's success in the original game."""
    rates = "\n".join(
        f"- {skill}: {mean:.0f}% +/- {std:.0f}%"
        for skill, (mean, std) in _checked_stats(success_stats).items()
    )
    envs = "\n\n".join(_render(i, c, names) for i, c in enumerate(previous, start=1))
    where = 'in the "information_used" field' if structured else "at the start of your reply"
    return "\n\n".join(
        (
            f"The agent trained in the {len(previous)} environments you created, then in "
            "the original game, and was evaluated in the original game. "
            f"The environments were:\n\n{envs}",
            "Success rate of each skill in the original game "
            f"(mean% +/- std% over the evaluation runs, whole percent):\n{rates}",
            f"Create {n} new environments that help the agent improve the skills it is "
            "still poor at without losing the skills it has. Say briefly "
            f"{where} which of the information above you used and how.",
            _format_section(n, names, structured),
        )
    )


def _closed_object(properties: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


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


def _format_section(n: int, names: NameMap, structured: bool) -> str:
    if structured:
        return (
            'Reply with one JSON object whose "environments" list holds exactly '
            f'{n} environments, each with "purpose" (one sentence), '
            '"environment_settings" and "inventory_settings" (every item with its count).'
        )
    example = CrafterConfig(purpose="which skills this environment trains")
    return (
        'For each environment write a line "Purpose: ..." saying which skills it trains, '
        "then its settings in one ```json code block (list only the items the agent "
        "should start with), for example:\n\n"
        + _render(1, example, names)
        + f"\n\nWrite exactly {n} such environments and no other JSON."
    )


def _render(index: int, config: CrafterConfig, names: NameMap) -> str:
    data = config.to_dict()
    shown = {
        "environment_settings": {
            names.show(k): names.show(v) for k, v in data["environment_settings"].items()
        },
        "inventory_settings": {names.show(k): v for k, v in data["inventory_settings"].items()},
    }
    return (
        f"Environment {index}\nPurpose: {config.purpose}\n```json\n"
        f"{json.dumps(shown, indent=2)}\n```"
    )


def _checked_stats(
    stats: Mapping[str, tuple[float, float]],
) -> dict[str, tuple[float, float]]:
    """Every achievement exactly once, as (mean %, std %), in the game's order."""
    known = skills()
    for name in stats:
        if name not in known:
            raise ConfigError(
                f"success_stats.{name}", f"unknown skill; expected the names {', '.join(known)}"
            )
    missing = [s for s in known if s not in stats]
    if missing:
        raise ConfigError(
            "success_stats", f"missing skills {', '.join(missing)}; give (mean %, std %) for each"
        )
    out: dict[str, tuple[float, float]] = {}
    for skill in known:
        try:
            mean, std = (float(x) for x in stats[skill])
        except (TypeError, ValueError):
            raise ConfigError(
                f"success_stats.{skill}", f"expected (mean %, std %); got {stats[skill]!r}"
            ) from None
        out[skill] = (mean, std)
    return out
