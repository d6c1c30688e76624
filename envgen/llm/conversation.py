"""The LLM environment designer: one conversation per initial environment set.

Cycle 1 asks for N environments (`generate`); every later cycle sends the agent's
per-skill success in the original game and asks for N adapted ones (`adapt`). The
history is kept across cycles, as in the paper (docs/paper.md, "The method in four
steps"). A reply that does not yield N usable environments is re-asked up to
`max_reasks` times with the parse error as the next user message; every re-ask is a
call of its own (counted, cached).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from envgen.errors import ConfigError, LLMResponseError
from envgen.llm.design_spec import design_spec
from envgen.llm.parse import ParsedEnvironments, parse_environments
from envgen.llm.request import ChatRequest, LLMCallable, Message
from envgen.llm.schema import DIALECTS, reply_schema, response_format

# Reply budget: a free-text environment with its purpose line is about 150 tokens,
# a structured one (every item listed) about 200; 4096 is gpt-4-1106-preview's cap.
TOKENS_PER_ENVIRONMENT = 256
TOKENS_OVERHEAD = 512
MAX_REPLY_TOKENS = 4096


@dataclasses.dataclass(frozen=True)
class PromptOptions:
    """How the designer asks; everything here enters the request (and the cache key)."""

    game: str = "crafter"
    """The game the worlds are for, a key of `envgen.games.GAMES`."""
    initial_set: int = 0
    """Index of the initial environment set (the paper averages 3); sent as the seed."""
    obfuscate: bool = False
    """Show parameter1../optionA../item1.. instead of real names (paper ablation)."""
    structured: str = "off"
    """Structured-output dialect: "off" (free text), "json_schema" or "json_object"."""
    temperature: float = 0.0
    """Sampling temperature; the paper uses 0."""
    max_reasks: int = 1
    """Re-asks after an unusable reply before giving up."""
    history_cycles: int = 0
    """0 keeps the whole conversation (the paper); k > 0 sends the first cycle's exchange
    and only the last k earlier cycles, so many cycles fit a small model's context."""

    def __post_init__(self) -> None:
        design_spec(self.game)
        if self.structured not in DIALECTS:
            raise ConfigError(
                "structured", f"{self.structured!r} unknown; use one of {', '.join(DIALECTS)}"
            )
        if self.initial_set < 0 or self.max_reasks < 0 or self.history_cycles < 0:
            raise ConfigError("initial_set/max_reasks/history_cycles", "must be >= 0")


def max_tokens(n: int) -> int:
    """Reply token budget for `n` environments."""
    return min(MAX_REPLY_TOKENS, TOKENS_OVERHEAD + TOKENS_PER_ENVIRONMENT * n)


def call_label(options: PromptOptions, n: int, cycle: int) -> str:
    """Stable name of a call, e.g. ``crafter/initial/n4/set0`` or ``crafter/adapt2/n4/set1``."""
    stage = "initial" if cycle == 1 else f"adapt{cycle}"
    hidden = "/obfuscated" if options.obfuscate else ""
    return f"{options.game}/{stage}/n{n}{hidden}/set{options.initial_set}"


class EnvironmentDesigner:
    """Holds the conversation; `generate(n)` once, then `adapt(success_stats)` per cycle."""

    def __init__(self, options: PromptOptions, llm: LLMCallable):
        self.options = options
        self.llm = llm
        self.messages: list[Message] = []
        self.results: list[ParsedEnvironments] = []
        self._spec = design_spec(options.game)
        self._names = self._spec.name_map(options.obfuscate)
        self._n = 0
        self._cycle_starts: list[int] = []  # index in `messages` of each cycle's prompt

    @property
    def cycle(self) -> int:
        """Number of cycles answered so far."""
        return len(self.results)

    def generate(self, n: int) -> ParsedEnvironments:
        """Cycle 1: `n` environments from the initial prompt."""
        if self.messages:
            raise RuntimeError("generate() starts a conversation; use adapt() for later cycles")
        if n < 1:
            raise ConfigError("n", f"ask for at least 1 environment; got {n}")
        self._n = n
        structured = self.options.structured != "off"
        prompt = self._spec.initial_prompt(n, self._names, structured)
        return self._ask(prompt, explain=False)

    def adapt(self, success_stats: Mapping[str, tuple[float, float]]) -> ParsedEnvironments:
        """Next cycle: `success_stats` maps each skill to (mean %, std %) in the original game."""
        if not self.results:
            raise RuntimeError("call generate(n) before adapt()")
        structured = self.options.structured != "off"
        prompt = self._spec.adaptation_prompt(
            self.results[-1].configs, success_stats, self._n, self._names, structured
        )
        return self._ask(prompt, explain=True)

    def _ask(self, prompt: str, explain: bool) -> ParsedEnvironments:
        opts = self.options
        label = call_label(opts, self._n, self.cycle + 1)
        schema = reply_schema(self._spec.environment_schema(self._names), self._n, explain)
        self._cycle_starts.append(len(self.messages))
        self.messages.append(Message("user", prompt))
        attempt = 0
        while True:
            request = ChatRequest(
                messages=self._sent_messages(),
                temperature=opts.temperature,
                seed=opts.initial_set,
                max_tokens=max_tokens(self._n),
                response_format=response_format(schema, opts.structured),
                label=label + (f"/reask{attempt}" if attempt else ""),
                reask=attempt > 0,
            )
            reply = self.llm(request)
            self.messages.append(Message("assistant", reply.text))
            try:
                parsed = parse_environments(
                    reply.text, self._n, opts.game, obfuscated=opts.obfuscate
                )
            except LLMResponseError as exc:
                if attempt == opts.max_reasks:
                    raise LLMResponseError(
                        f"{label}: {exc}\n(gave up after {attempt} re-ask(s))"
                    ) from None
                attempt += 1
                cut = reply.finish_reason == "length"
                self.messages.append(Message("user", _reask_text(str(exc), self._n, cut)))
                continue
            self.results.append(parsed)
            return parsed

    def _sent_messages(self) -> tuple[Message, ...]:
        """The conversation as sent: whole, or first cycle + last `history_cycles` + now."""
        keep = self.options.history_cycles
        starts = self._cycle_starts
        if keep == 0 or len(starts) <= keep + 2:
            return tuple(self.messages)
        first = self.messages[: starts[1]]
        return tuple(first + self.messages[starts[-1 - keep] :])


def _reask_text(error: str, n: int, cut: bool) -> str:
    lines = [f"Your reply could not be used: {error}"]
    if cut:
        lines.append("Your reply was cut off by the length limit; keep it shorter.")
    lines.append(f"Reply again with exactly {n} environments in the required format.")
    return "\n".join(lines)
