"""What one run's phases share (`Run`), how it runs (`RunOptions`), and its LLM call log.

Kept apart from `envgen.loop.runner` so that the methods (the runner's EnvGen loop,
`envgen.loop.curricula`) import it without importing each other.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from envgen.agents.trainer import Trainer
from envgen.envs.crafter.config import CrafterConfig
from envgen.files import write_json_atomic
from envgen.games import GameSpec
from envgen.llm.accounting import Ledger, write_accounting
from envgen.llm.cache import CachedLLM
from envgen.llm.request import ChatRequest, ChatResponse, record_key, request_record
from envgen.loop.config import RunConfig
from envgen.loop.world_designers import Designer
from envgen.store.run_dir import RunDir


def with_world_rules(config: Any, rules: str) -> Any:
    """A Crafter config under `rules` (CrafterConfig.world_rules); other games' as given."""
    if isinstance(config, CrafterConfig):
        return dataclasses.replace(config, world_rules=rules)
    return config


@dataclasses.dataclass(frozen=True)
class RunOptions:
    """How (not what) to run: these never change a run's result or its hash."""

    device: str = "cpu"
    """torch device."""
    num_workers: int | None = None
    """Vec-env worker processes (results do not depend on it)."""
    progress: bool = False
    """Show tqdm progress bars."""
    resume: bool = True
    """Continue a partial run directory instead of refusing it."""
    checkpoint_minutes: float = 0.0
    """Also checkpoint at the first rollout boundary this long after the last one (0: only
    every `checkpoint_every` steps): a job killed on a wall-clock budget keeps its work."""


class CallLog:
    """Wraps the cached LLM: names each request's run (its slot) and logs each exchange.

    Each entry: label, cache key of the request sent, how the reply was served (exact,
    slot, live) and, for calls that carry feedback, its drift (`envgen.llm.slots`).
    """

    def __init__(self, llm: CachedLLM, run: str):
        self.llm = llm
        self.run = run
        self.calls: list[dict[str, Any]] = []

    def __call__(self, request: ChatRequest) -> ChatResponse:
        request = dataclasses.replace(request, run=self.run)
        response = self.llm(request)
        self.calls.append(
            {
                "label": request.label,
                "key": record_key(request_record(request, self.llm.backend.model)),
                "reask": request.reask,
                "cached": response.cached,
                "served": response.served,
                "drift": response.drift,
                "model": response.model,
            }
        )
        return response


@dataclasses.dataclass
class Run:
    """What one run's phases share."""

    config: RunConfig
    seed: int
    paths: RunDir
    trainer: Trainer
    options: RunOptions
    llm: CallLog | None
    designer: Designer | None
    game: GameSpec

    @property
    def original(self) -> Any:
        """The original game the agent trains and is scored in (`original_world`)."""
        return with_world_rules(self.game.original, self.config.original_world)

    def designed(self, configs: Sequence[Any]) -> list[Any]:
        """Designed environments as they are played (`llm_world_rules`)."""
        return [with_world_rules(c, self.config.llm_world_rules) for c in configs]

    def save_llm_calls(self) -> None:
        """The LLM call log and accounting; a non-LLM designer's are empty/zero."""
        if self.llm is not None:
            write_json_atomic(self.paths.llm_calls, self.llm.calls)
            write_accounting(self.llm.llm.ledger, self.paths.llm_accounting)
        elif self.designer is not None:
            write_json_atomic(self.paths.llm_calls, [])
            write_accounting(Ledger(), self.paths.llm_accounting)
