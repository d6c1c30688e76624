"""The parts of a designer prompt that every game words the same way.

envgen/llm/crafter.py and heist.py write what differs by game; the output format, how a
previous environment is shown, the adaptation step and the check of the success
statistics are here, once. Prompt texts are part of the LLM cache's keys: a change of
one byte makes every recorded reply miss, which the replay tests catch.
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


@dataclasses.dataclass(frozen=True)
class GamePrompts:
    """A game's designer prompts: what the game words its own way (its task and skills,
    parameters, rules, example and how it measures success), put into the shared parts.
    envgen/llm/crafter.py and heist.py each make one."""

    task: Callable[[], str]
    """The opening paragraph: the game and the skills the agent needs."""
    skills: Callable[[], tuple[str, ...]]
    parameters: Callable[[NameMap], str]
    """The parameters of an environment, as the names show them."""
    rules: Sequence[str]
    hard: str
    """How the initial request calls the skills to practise ("hard to reach")."""
    example: DesignedConfig
    """The environment the free-text output format shows."""
    measured: str
    """How the original game measured the agent ("evaluated", "tested")."""
    runs: str
    """Over what ("evaluation runs", "test runs")."""
    inventory_note: str = ""
    """Words after "inventory_settings" in the structured output format."""
    code_block_note: str = ""
    """Words after "code block" in the free-text output format."""

    def briefing(self, names: NameMap) -> str:
        """What every self-contained request states first: task, skills, parameters, rules."""
        rules = "Game rules to respect:\n" + "\n".join(f"- {r}" for r in self.rules)
        return "\n\n".join((self.task(), self.parameters(names), rules))

    def format_section(self, n: int, names: NameMap, structured: bool) -> str:
        """How to reply: one JSON object (`structured`), or `n` "Purpose" lines and blocks."""
        if structured:
            return (
                'Reply with one JSON object whose "environments" list holds exactly '
                f'{n} environments, each with "purpose" (one sentence), '
                f'"environment_settings" and "inventory_settings"{self.inventory_note}.'
            )
        return (
            'For each environment write a line "Purpose: ..." saying which skills it trains, '
            f"then its settings in one ```json code block{self.code_block_note}, for example:\n\n"
            + render(1, self.example, names)
            + f"\n\nWrite exactly {n} such environments and no other JSON."
        )

    def initial_prompt(self, n: int, names: NameMap, structured: bool) -> str:
        """Step 1 of the method: the briefing, a request for `n` environments, the format."""
        return "\n\n".join(
            (
                self.briefing(names),
                f"Create {n} environments in which the agent can practise the skills it "
                f"needs, especially those that are {self.hard} in the original game.",
                self.format_section(n, names, structured),
            )
        )

    def adaptation_prompt(
        self,
        previous: Sequence[DesignedConfig],
        success_stats: Mapping[str, tuple[float, float]],
        n: int,
        names: NameMap,
        structured: bool,
    ) -> str:
        """Step 4 of the method: the previous environments, their outcome, `n` new ones."""
        envs = "\n\n".join(render(i, c, names) for i, c in enumerate(previous, start=1))
        return "\n\n".join(
            (
                f"The agent trained in the {len(previous)} environments you created, then in "
                f"the original game, and was {self.measured} in the original game. "
                f"The environments were:\n\n{envs}",
                self._rates_section(success_stats),
                _request(n, structured),
                self.format_section(n, names, structured),
            )
        )

    def results_prompt(
        self,
        success_stats: Mapping[str, tuple[float, float]],
        n: int,
        names: NameMap,
        structured: bool,
    ) -> str:
        """A later adaptation, as the authors' conversation has it: the environments are
        those of the reply just before this message, so only their outcome is new."""
        return "\n\n".join(
            (
                "The agent trained in the environments of your last reply, then in the "
                f"original game, and was {self.measured} in the original game again.",
                self._rates_section(success_stats),
                _request(n, structured),
                f"Reply in the same format as before, with exactly {n} environments.",
            )
        )

    def _rates_section(self, success_stats: Mapping[str, tuple[float, float]]) -> str:
        """The feedback lines ("- skill: M% +/- S%", the form envgen.llm.slots masks)."""
        rates = "\n".join(
            f"- {skill}: {mean:.0f}% +/- {std:.0f}%"
            for skill, (mean, std) in checked_stats(success_stats, self.skills()).items()
        )
        return (
            "Success rate of each skill in the original game "
            f"(mean% +/- std% over the {self.runs}, whole percent):\n{rates}"
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
