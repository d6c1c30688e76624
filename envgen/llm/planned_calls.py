"""The initial LLM calls the pipeline makes, by name, so they can be recorded ahead.

They depend on nothing and are committed in `data/llm_cache/` for the bundled local
model (docs/llm.md, "Recorded calls"); adaptation calls are recorded by the loop (fill).
"""

from __future__ import annotations

import dataclasses

from envgen.errors import ConfigError
from envgen.llm.client import BackendConfig
from envgen.llm.conversation import REDRAW_SUFFIX, PromptOptions, base_label, call_label
from envgen.llm.request import ChatRequest


@dataclasses.dataclass(frozen=True)
class PlannedCall:
    """One initial generation call."""

    n: int
    """Environments asked for."""
    initial_set: int
    """Initial-set index (the request seed)."""
    obfuscate: bool
    """Obfuscated parameter names (ablation)."""
    used_by: str
    """Which experiments consume it."""
    game: str = "crafter"
    """The game the worlds are for (a key of `envgen.games.GAMES`)."""

    def options(
        self, backend: BackendConfig, temperature: float = 0.0, redraw_repeats: bool = False
    ) -> PromptOptions:
        """The designer options that reproduce this call on `backend` at `temperature`
        (a run's `llm_temperature`), drawing an initial set with repeated worlds again if
        `redraw_repeats` (a run's `llm_redraw_repeats`)."""
        return PromptOptions(
            game=self.game,
            initial_set=self.initial_set,
            obfuscate=self.obfuscate,
            structured=backend.structured,
            temperature=temperature,
            redraw_repeats=redraw_repeats,
        )

    def label(self) -> str:
        return call_label(
            PromptOptions(game=self.game, initial_set=self.initial_set, obfuscate=self.obfuscate),
            self.n,
            cycle=1,
        )


_CALLS = (
    *(PlannedCall(4, s, False, "EnvGen and Fixed (3 initial sets)") for s in range(3)),
    *(PlannedCall(n, 0, False, "environments per call ablation") for n in (1, 2, 8)),
    PlannedCall(4, 0, True, "obfuscated-prompt ablation"),
    # One call of 16 per curriculum set: easy-to-hard uses set 0, adversarial sets 0-3.
    *(PlannedCall(16, s, False, "easy-to-hard and adversarial curricula") for s in range(4)),
    # Heist (Table 8): N_cycle = 1, so the initial call is the only one; 3 initial sets.
    *(PlannedCall(4, s, False, "Heist PPO + EnvGen (Table 8)", game="heist") for s in range(3)),
)
PLANNED_CALLS: dict[str, PlannedCall] = {c.label(): c for c in _CALLS}


def planned_call(label: str) -> PlannedCall:
    """The planned call named `label` (a re-ask suffix is ignored)."""
    base = base_label(label)
    if base not in PLANNED_CALLS:
        raise ConfigError("call", f"{label!r} is not planned; known: {', '.join(PLANNED_CALLS)}")
    return PLANNED_CALLS[base]


def record_command(request: ChatRequest, backend: BackendConfig) -> str | None:
    """The command that records `request`, a planned call, on `backend` (None if not
    planned): at the request's temperature; for a redraw, drawing repeated worlds again;
    for a redraw or re-ask, in mode fill, which replays the recorded first draw instead
    of sampling it again (a re-ask after an unusable reply comes either way)."""
    base = base_label(request.label)
    if base not in PLANNED_CALLS:
        return None
    flags = backend.record_flags()
    if request.temperature:
        flags += f" --temperature {request.temperature:g}"
    if REDRAW_SUFFIX in request.label:
        flags += " --redraw-repeats"
    if base != request.label:
        flags += " --mode fill"
    return f"envgen llm record {flags} --call {base}"
