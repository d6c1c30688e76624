"""The parts of a designer prompt that every game words the same way.

envgen/llm/crafter.py and envgen/llm/heist.py write what differs by game (the task,
skills, parameters and rules); the schema's frame, the output format, how a previous
environment is shown, the adaptation step and the check of the success statistics are
here, once. Prompt texts are part of the LLM cache's keys (envgen/llm/cache.py): a
change of one byte here makes every recorded reply miss, which the replay tests catch.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from envgen.errors import ConfigError
from envgen.llm.names import NameMap


class DesignedConfig(Protocol):
    """What a game's environment config offers the prompt (CrafterConfig, HeistConfig)."""

    purpose: str

    def to_dict(self) -> dict[str, Any]: ...


def environment_schema(
    env_props: dict[str, Any], inventory_props: dict[str, Any]
) -> dict[str, Any]:
    """JSON schema of one environment as the LLM writes it (every field required)."""
    return {
        "type": "object",
        "properties": {
            "purpose": {"type": "string", "maxLength": 200},
            "environment_settings": _closed_object(env_props),
            "inventory_settings": _closed_object(inventory_props),
        },
        "required": ["purpose", "environment_settings", "inventory_settings"],
        "additionalProperties": False,
    }


def _closed_object(properties: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


def format_section(
    n: int,
    names: NameMap,
    structured: bool,
    example: DesignedConfig,
    *,
    inventory_note: str = "",
    code_block_note: str = "",
) -> str:
    """How to reply: one JSON object under the schema (`structured`), or `n` "Purpose"
    lines each with a JSON code block, `example` shown. A game's own words go after
    "inventory_settings" in the first (`inventory_note`) and after "code block" in the
    second (`code_block_note`)."""
    if structured:
        return (
            'Reply with one JSON object whose "environments" list holds exactly '
            f'{n} environments, each with "purpose" (one sentence), '
            f'"environment_settings" and "inventory_settings"{inventory_note}.'
        )
    return (
        'For each environment write a line "Purpose: ..." saying which skills it trains, '
        f"then its settings in one ```json code block{code_block_note}, for example:\n\n"
        + render(1, example, names)
        + f"\n\nWrite exactly {n} such environments and no other JSON."
    )


def render(index: int, config: DesignedConfig, names: NameMap) -> str:
    """One environment as the LLM wrote it (names shown as the prompt shows them)."""
    data = config.to_dict()
    shown = {
        section: {names.show(k): names.show(v) if isinstance(v, str) else v for k, v in items}
        for section, items in (
            ("environment_settings", data["environment_settings"].items()),
            ("inventory_settings", data["inventory_settings"].items()),
        )
    }
    return (
        f"Environment {index}\nPurpose: {config.purpose}\n```json\n"
        f"{json.dumps(shown, indent=2)}\n```"
    )


def briefing(task: str, parameters: str, rules: Sequence[str]) -> str:
    """What every self-contained request states first (the initial prompt and the
    first adaptation): the game's task and skills, its parameters and its rules."""
    return "\n\n".join(
        (task, parameters, "Game rules to respect:\n" + "\n".join(f"- {r}" for r in rules))
    )


def initial_prompt(briefing_text: str, n: int, hard: str, format_text: str) -> str:
    """Step 1 of the method: the briefing, a request for `n` environments that practise
    the skills that are `hard` ("hard to reach", "hard to learn") in the original game,
    and the output format."""
    return "\n\n".join(
        (
            briefing_text,
            f"Create {n} environments in which the agent can practise the skills it needs, "
            f"especially those that are {hard} in the original game.",
            format_text,
        )
    )


def adaptation_prompt(
    previous: Sequence[DesignedConfig],
    success_stats: Mapping[str, tuple[float, float]],
    skills: Sequence[str],
    n: int,
    names: NameMap,
    structured: bool,
    format_text: str,
    *,
    measured: str,
    runs: str,
) -> str:
    """Step 4 of the method: the previous environments, each skill's success in the
    original game (`measured` and `runs` say how the game measured it: "evaluated" over
    "evaluation runs", "tested" over "test runs") and a request for `n` new ones, to be
    written as `format_text` says."""
    envs = "\n\n".join(render(i, c, names) for i, c in enumerate(previous, start=1))
    return "\n\n".join(
        (
            f"The agent trained in the {len(previous)} environments you created, then in "
            f"the original game, and was {measured} in the original game. "
            f"The environments were:\n\n{envs}",
            _rates_section(success_stats, skills, runs),
            _request(n, structured),
            format_text,
        )
    )


def results_prompt(
    success_stats: Mapping[str, tuple[float, float]],
    skills: Sequence[str],
    n: int,
    structured: bool,
    *,
    measured: str,
    runs: str,
) -> str:
    """A later adaptation, as the authors' conversation has it: the environments are
    those of the reply just before this message, so only their outcome is new."""
    return "\n\n".join(
        (
            "The agent trained in the environments of your last reply, then in the "
            f"original game, and was {measured} in the original game again.",
            _rates_section(success_stats, skills, runs),
            _request(n, structured),
            f"Reply in the same format as before, with exactly {n} environments.",
        )
    )


@dataclasses.dataclass(frozen=True)
class GamePrompts:
    """A game's designer prompts: what the game words its own way (its task and skills,
    parameters, rules, output format and how it measures success), put into the parts
    above. envgen/llm/crafter.py and heist.py each make one."""

    task: Callable[[], str]
    """The opening paragraph: the game and the skills the agent needs."""
    skills: Callable[[], tuple[str, ...]]
    parameters: Callable[[NameMap], str]
    """The parameters of an environment, as the names show them."""
    rules: Sequence[str]
    hard: str
    """How the initial request calls the skills to practise ("hard to reach")."""
    format_section: Callable[[int, NameMap, bool], str]
    measured: str
    """How the original game measured the agent ("evaluated", "tested")."""
    runs: str
    """Over what ("evaluation runs", "test runs")."""

    def briefing(self, names: NameMap) -> str:
        """What every self-contained request states first: the task, the skills, the
        parameters and the game rules (the initial prompt and the first adaptation)."""
        return briefing(self.task(), self.parameters(names), self.rules)

    def initial_prompt(self, n: int, names: NameMap, structured: bool) -> str:
        """Step 1 of the method: task, skills, parameters, rules and the output format."""
        return initial_prompt(
            self.briefing(names), n, self.hard, self.format_section(n, names, structured)
        )

    def adaptation_prompt(
        self,
        previous: Sequence[DesignedConfig],
        success_stats: Mapping[str, tuple[float, float]],
        n: int,
        names: NameMap,
        structured: bool,
    ) -> str:
        """Step 4: the previous environments and each skill's success in the original game."""
        return adaptation_prompt(
            previous,
            success_stats,
            self.skills(),
            n,
            names,
            structured,
            self.format_section(n, names, structured),
            measured=self.measured,
            runs=self.runs,
        )

    def results_prompt(
        self,
        success_stats: Mapping[str, tuple[float, float]],
        n: int,
        names: NameMap,
        structured: bool,
    ) -> str:
        """A later adaptation: the success the worlds of the previous reply led to."""
        return results_prompt(
            success_stats, self.skills(), n, structured, measured=self.measured, runs=self.runs
        )


def _rates_section(
    success_stats: Mapping[str, tuple[float, float]], skills: Sequence[str], runs: str
) -> str:
    """The feedback lines ("- skill: M% +/- S%", the form envgen.llm.slots masks)."""
    rates = "\n".join(
        f"- {skill}: {mean:.0f}% +/- {std:.0f}%"
        for skill, (mean, std) in checked_stats(success_stats, skills).items()
    )
    return (
        "Success rate of each skill in the original game "
        f"(mean% +/- std% over the {runs}, whole percent):\n{rates}"
    )


def _request(n: int, structured: bool) -> str:
    where = 'in the "information_used" field' if structured else "at the start of your reply"
    return (
        f"Create {n} new environments that help the agent improve the skills it is "
        "still poor at without losing the skills it has. Say briefly "
        f"{where} which of the information above you used and how."
    )


def checked_stats(
    stats: Mapping[str, tuple[float, float]], skills: Sequence[str]
) -> dict[str, tuple[float, float]]:
    """Every skill exactly once, as (mean %, std %), in the order of `skills`."""
    for name in stats:
        if name not in skills:
            raise ConfigError(
                f"success_stats.{name}", f"unknown skill; expected the names {', '.join(skills)}"
            )
    missing = [s for s in skills if s not in stats]
    if missing:
        raise ConfigError(
            "success_stats", f"missing skills {', '.join(missing)}; give (mean %, std %) for each"
        )
    out: dict[str, tuple[float, float]] = {}
    for skill in skills:
        try:
            mean, std = (float(x) for x in stats[skill])
        except (TypeError, ValueError):
            raise ConfigError(
                f"success_stats.{skill}", f"expected (mean %, std %); got {stats[skill]!r}"
            ) from None
        out[skill] = (mean, std)
    return out
