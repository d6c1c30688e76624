"""The designer registry: `RunConfig.designer` -> its class, its settings and what it
takes from the loop.

A designer is one class (`envgen.loop.world_designers.Designer`'s surface) and one entry
here; the config, the runner, the curricula and the ranking bench read everything about
it from its entry, so adding one touches no other module. Its settings are `RunConfig`
fields, left out of other designers' hashes; a class that plays the current policy
(`CurationSettings`) is built with the loop's rollout and pays the rollouts' env steps
from each cycle's budget.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from envgen.llm.conversation import PromptOptions
from envgen.llm.request import LLMCallable
from envgen.loop.world_designers import (
    CurationSettings,
    Designer,
    HeuristicDesigner,
    HeuristicSettings,
    LLMDesigner,
    PLRDesigner,
    PLRSettings,
    RandomDesigner,
    Rollout,
    SFLDesigner,
    SFLSettings,
)


@dataclasses.dataclass(frozen=True)
class DesignerKind:
    """One registered designer."""

    cls: type
    """Built as cls(options, seed[, settings][, llm=][, rollout=])."""
    settings: type | None = None
    """Dataclass of its `RunConfig` fields (same names), or None."""
    llm: bool = False
    """It asks the LLM: the run needs replies (cache or server) and passes its call log."""

    @property
    def rollouts(self) -> bool:
        """It scores worlds by rollouts of the current policy (`CurationSettings`)."""
        return self.settings is not None and issubclass(self.settings, CurationSettings)

    @property
    def fields(self) -> tuple[str, ...]:
        """Its `RunConfig` fields."""
        return tuple(f.name for f in dataclasses.fields(self.settings)) if self.settings else ()


DESIGNERS: dict[str, DesignerKind] = {
    "llm": DesignerKind(LLMDesigner, llm=True),
    "random": DesignerKind(RandomDesigner),
    "heuristic": DesignerKind(HeuristicDesigner, HeuristicSettings),
    "sfl": DesignerKind(SFLDesigner, SFLSettings),
    "plr": DesignerKind(PLRDesigner, PLRSettings),
}


def make_designer(
    kind: str,
    options: PromptOptions,
    seed: int,
    settings: Any = None,
    *,
    llm: LLMCallable | None = None,
    rollout: Rollout | None = None,
) -> Designer:
    """The designer `kind` with what its entry says it takes: `settings` (its settings
    dataclass, `RunConfig.designer_settings`; None: the class's defaults), the LLM's
    call log, the loop's rollout of the current policy."""
    entry = DESIGNERS[kind]
    given: dict[str, Any] = {}
    if entry.llm:
        assert llm is not None, f"designer {kind!r} asks the LLM: pass its call log"
        given["llm"] = llm
    if entry.rollouts:
        assert rollout is not None, f"designer {kind!r} plays the policy: pass its rollout"
        given["rollout"] = rollout
    args = (settings,) if settings is not None else ()
    return entry.cls(options, seed, *args, **given)
