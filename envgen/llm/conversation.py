"""The LLM environment designer: one conversation per initial environment set.

Cycle 1 asks for N environments (`generate`); each later cycle sends the agent's
per-skill success in the original game and asks for N adapted ones (`adapt`). The
requests follow the authors' code (aszala/EnvGen, environment_generation/
update_environments.py), since the request is the protocol: the initial call is one user
message; the first adaptation (cycle 2) one self-contained message that restates the
briefing and shows the initial worlds and their scores; each later one sends the earlier
adaptations' messages, each followed by its usable reply, then a short results message:
2K-3 messages at cycle K, unless `history_cycles` trims them.

An unusable reply is re-asked up to `max_reasks` times with the parse error as the next
user message, each re-ask a call of its own (counted, cached). With `redraw_repeats`, an
initial reply whose environments repeat one another is drawn again (the same request,
another seed, up to `REDRAWS` times) until one has none; else the draw with the fewest
is used (the earliest of equals). Failed replies, re-asks and unused draws stay out of
later requests, as in the authors' code (which has no re-asks).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

from envgen.errors import ConfigError, LLMResponseError, RunSettingError
from envgen.input_checks import check_temperature
from envgen.llm.design_spec import design_spec
from envgen.llm.local_models import LOCAL_MODELS
from envgen.llm.parse import ParsedEnvironments, parse_environments, repeated
from envgen.llm.request import ChatRequest, LLMCallable, Message
from envgen.llm.schema import DIALECTS, reply_schema, response_format

# Reply budget: a free-text environment with its purpose line is about 150 tokens,
# a structured one (every item listed) about 200; 4096 is gpt-4-1106-preview's cap.
TOKENS_PER_ENVIRONMENT = 256
TOKENS_OVERHEAD = 512
MAX_REPLY_TOKENS = 4096

AUTO = "auto"
"""`history_cycles` value: the whole history while the request fits the context."""
CHARS_PER_TOKEN = 2
"""`token_bound`'s bound: a message takes at most one token per 2 of its characters
(the servers' own counts give at least 2.49 for SmolLM2-135M, 2.97 for
Qwen2.5-Coder-1.5B: docs/llm.md, "Context"). No tokenizer is read: a request must be the
same on a machine without the model's file, or replay would miss."""
MESSAGE_TOKENS = 8
"""Template tokens added per message (Qwen's `<|im_start|>role\n ... <|im_end|>\n`: 5)."""
REASK_TOKENS = 256
"""Room kept per re-ask for its message (the parse error and the request: under 600
characters); its failed reply is kept room for as a reply budget."""


@dataclasses.dataclass(frozen=True)
class PromptOptions:
    """How the designer asks; everything here shapes the requests (and their cache keys)."""

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
    redraw_repeats: bool = False
    """Draw an initial reply whose environments repeat one another again (`REDRAWS`);
    off, the first usable reply is used (docs/llm.md, "Repeated worlds")."""
    history_cycles: int | str = 0
    """0 keeps the whole adaptation history (the authors' code); k > 0 sends the first
    adaptation's exchange and only the last k later ones; "auto" (`AUTO`) keeps what fits
    `context_tokens` with the reply budgets (`fitting_exchanges`)."""
    context_tokens: int | None = None
    """The model's context window in tokens (`context_window`), which "auto" fits."""

    def __post_init__(self) -> None:
        design_spec(self.game)
        if self.structured not in DIALECTS:
            raise ConfigError(
                "structured", f"{self.structured!r} unknown; use one of {', '.join(DIALECTS)}"
            )
        if self.initial_set < 0 or self.max_reasks < 0:
            raise ConfigError("initial_set/max_reasks", "must be >= 0")
        check_history_cycles(self.history_cycles, "history_cycles")
        if self.history_cycles == AUTO and not self.context_tokens:
            raise ConfigError(
                "history_cycles",
                "auto fits the model's context, known for the local models only "
                f"({', '.join(LOCAL_MODELS)}); give a number of cycles (0: the whole history)",
            )
        if self.redraw_repeats and self.initial_set >= REDRAW_SEED_STRIDE:
            raise ConfigError(
                "initial_set",
                f"{self.initial_set}: with redraws on, set indices stay below "
                f"{REDRAW_SEED_STRIDE} so that no two sets' draws share a seed",
            )
        check_temperature(self.temperature, "temperature")


def max_tokens(n: int) -> int:
    """Reply token budget for `n` environments."""
    return min(MAX_REPLY_TOKENS, TOKENS_OVERHEAD + TOKENS_PER_ENVIRONMENT * n)


def check_history_cycles(value: object, where: str) -> None:
    """A `ConfigError` unless `value` is a whole number >= 0 or "auto"."""
    if value == AUTO or (isinstance(value, int) and not isinstance(value, bool) and value >= 0):
        return
    raise ConfigError(where, f"{value!r}: give a whole number >= 0 (0: whole history) or auto")


def context_window(model: str) -> int | None:
    """The context window a local model is served with (`LocalModel.n_ctx`), else None."""
    return LOCAL_MODELS[model].n_ctx if model in LOCAL_MODELS else None


def auto_context(model: str) -> int:
    """The context window `llm_history_cycles: auto` fits for `model`; a `RunSettingError`
    naming the fix for a model of unknown context (an API model, a researcher's own)."""
    context = context_window(model)
    if context is None:
        raise RunSettingError(
            "llm_history_cycles",
            f"auto fits the model's context window, known only for the local models "
            f"({', '.join(LOCAL_MODELS)}), not {model!r}; set llm_history_cycles: <number> "
            "in the row's run: or the profile (0 = the whole history)",
        )
    return context


def token_bound(messages: Sequence[Message]) -> int:
    """An upper bound on the prompt tokens of `messages` (`CHARS_PER_TOKEN`)."""
    return sum(-(-len(m.content) // CHARS_PER_TOKEN) + MESSAGE_TOKENS for m in messages)


def auto_room(context: int, budget: int, max_reasks: int) -> int:
    """The tokens an "auto" request's messages may take: the context less the reply
    budget and, for each allowed re-ask, another reply budget and `REASK_TOKENS`."""
    return context - budget - max_reasks * (budget + REASK_TOKENS)


def fitting_exchanges(
    exchanges: Sequence[tuple[Message, Message]], prompt: Message, room: int
) -> list[tuple[Message, Message]]:
    """The exchanges an "auto" request sends before `prompt`: all of them while
    `token_bound` of them and the prompt is at most `room` tokens. Beyond, the first and a
    window of the latest that moves in blocks: when the window overflows, its oldest
    exchanges go until it takes at most half the room the first exchange and the prompt
    leave (the newest stays while it fits that room), and the requests after add to it
    until it overflows again.

    Why blocks: between two drops each request starts with the one before it, so the
    server reuses that prefix and a call costs about its new tokens; dropping one exchange
    a cycle changed the start of every request and reprocessed the whole prompt at every
    call (docs/llm.md, "Context"). The window is replayed from the exchanges' own
    prompts, so a request depends on its chain alone and replays from the cache.
    A `ConfigError` when not even the first exchange and the prompt fit."""
    first, later = list(exchanges[:1]), list(exchanges[1:])
    prompts = [user for user, _ in later] + [prompt]  # the prompt of each request since
    start = 0  # the window's oldest exchange, in `later`
    for end, asked in enumerate(prompts):  # the request sent before later[end]
        left = room - _bound(first) - token_bound([asked])
        if left < 0:
            raise ConfigError(
                "history_cycles",
                f"auto: the prompt and the first adaptation's exchange alone exceed the "
                f"{room} tokens the context leaves after the reply budgets; use a model "
                "with a longer context",
            )
        if _bound(later[start:end]) > left:
            half = [s for s in range(start, end) if _bound(later[s:end]) <= left // 2]
            # the newest exchange stays while it fits: a request without its predecessor's
            # prompt and reply would break the chain `envgen verify` follows (`chains`)
            if half:
                start = half[0]
            else:
                start = end - 1 if _bound(later[end - 1 : end]) <= left else end
    return [*first, *later[start:]]


def _bound(exchanges: Sequence[tuple[Message, Message]]) -> int:
    return token_bound([m for pair in exchanges for m in pair])


REASK_SUFFIX = "/reask"
"""A re-ask's label is its call's (or draw's) label, this suffix and the re-ask's number."""
REDRAW_SUFFIX = "/redraw"
"""A redraw's label is its call's label, this suffix and the draw's number."""
REDRAWS = 3
"""Draws after the first of an initial set whose environments repeat (`redraw_repeats`)."""
REDRAW_SEED_STRIDE = 1000
"""Draw k of initial set s is sent with seed s + k * REDRAW_SEED_STRIDE: the set's index
(the paper's sets differ by seed), moved so that no two sets' draws share a seed."""


def redraw_seed(initial_set: int, draw: int) -> int:
    """The seed of draw `draw` (0: the first) of `initial_set`."""
    return initial_set + draw * REDRAW_SEED_STRIDE


def base_label(label: str) -> str:
    """The call a label names, without a redraw or re-ask suffix."""
    return label.split(REDRAW_SUFFIX)[0].split(REASK_SUFFIX)[0]


def call_label(options: PromptOptions, n: int, cycle: int) -> str:
    """Stable name of a call, e.g. ``crafter/initial/n4/set0`` or ``crafter/adapt2/n4/set1``."""
    stage = "initial" if cycle == 1 else f"adapt{cycle}"
    hidden = "/obfuscated" if options.obfuscate else ""
    return f"{options.game}/{stage}/n{n}{hidden}/set{options.initial_set}"


class EnvironmentDesigner:
    """Holds the conversation; `generate(n)` once, then `adapt(success_stats)` per cycle.

    `messages` logs every message in order (prompts, replies, re-asks; the loop writes a
    cycle's first new one as its feedback file); requests are built from `_exchanges`,
    one (prompt, usable reply) pair per adaptation answered so far."""

    def __init__(self, options: PromptOptions, llm: LLMCallable):
        self.options = options
        self.llm = llm
        self.messages: list[Message] = []
        self.results: list[ParsedEnvironments] = []
        self._spec = design_spec(options.game)
        self._names = self._spec.name_map(options.obfuscate)
        self._n = 0
        self._exchanges: list[tuple[Message, Message]] = []

    def generate(self, n: int) -> ParsedEnvironments:
        """Cycle 1: `n` environments from the initial prompt."""
        if self.messages:
            raise RuntimeError("generate() starts a conversation; use adapt() for later cycles")
        if n < 1:
            raise ConfigError("n", f"ask for at least 1 environment; got {n}")
        self._n = n
        structured = self.options.structured != "off"
        prompt = self._spec.prompts.initial_prompt(n, self._names, structured)
        parsed = self._ask(prompt, explain=False, history=())
        if self.options.redraw_repeats:
            parsed = self._redraw(prompt, parsed)
        self.results.append(parsed)
        return parsed

    def _redraw(self, prompt: str, first: ParsedEnvironments) -> ParsedEnvironments:
        """`first`, or a later draw of the same request with fewer repeated environments."""
        best, fewest = first, len(repeated(first.configs))
        for draw in range(1, REDRAWS + 1):
            if not fewest:
                break
            try:
                again = self._ask(prompt, explain=False, history=(), draw=draw)
            except LLMResponseError:  # unusable even after its re-ask: a draw spent
                continue
            repeats = len(repeated(again.configs))
            if repeats < fewest:
                best, fewest = again, repeats
        return best

    def adapt(self, success_stats: Mapping[str, tuple[float, float]]) -> ParsedEnvironments:
        """Next cycle: `success_stats` maps each skill to (mean %, std %) in the original game."""
        if not self.results:
            raise RuntimeError("call generate(n) before adapt()")
        structured = self.options.structured != "off"
        if len(self.results) == 1:  # the first adaptation stands alone
            body = self._spec.prompts.adaptation_prompt(
                self.results[0].configs, success_stats, self._n, self._names, structured
            )
            prompt = f"{self._spec.prompts.briefing(self._names)}\n\n{body}"
        else:
            prompt = self._spec.prompts.results_prompt(
                success_stats, self._n, self._names, structured
            )
        parsed = self._ask(prompt, explain=True, history=self._history(prompt))
        self.results.append(parsed)
        return parsed

    def _history(self, prompt: str) -> tuple[Message, ...]:
        """The earlier adaptations sent before `prompt`, as `history_cycles` says."""
        keep, opts = self.options.history_cycles, self.options
        kept = self._exchanges
        if keep == AUTO:
            assert opts.context_tokens is not None  # PromptOptions checks it
            room = auto_room(opts.context_tokens, max_tokens(self._n), opts.max_reasks)
            kept = fitting_exchanges(kept, Message("user", prompt), room)
        elif keep and len(kept) > keep + 1:
            kept = [kept[0], *kept[-keep:]]
        return tuple(m for pair in kept for m in pair)

    def _ask(
        self, prompt: str, explain: bool, history: tuple[Message, ...], draw: int = 0
    ) -> ParsedEnvironments:
        """The usable reply to `prompt` after `history` (draw `draw`), re-asking as allowed."""
        opts = self.options
        label = call_label(opts, self._n, len(self.results) + 1)
        if draw:
            label += f"{REDRAW_SUFFIX}{draw}"
        schema = reply_schema(self._spec.environment_schema(self._names), self._n, explain)
        asked = Message("user", prompt)
        attempt_messages = [asked]
        if not draw:  # a redraw sends the same prompt again; the log holds it once
            self.messages.append(asked)
        attempt = 0
        while True:
            request = ChatRequest(
                messages=(*history, *attempt_messages),
                temperature=opts.temperature,
                seed=redraw_seed(opts.initial_set, draw),
                max_tokens=max_tokens(self._n),
                response_format=response_format(schema, opts.structured),
                label=label + (f"{REASK_SUFFIX}{attempt}" if attempt else ""),
                reask=attempt > 0,
            )
            reply = self.llm(request)
            answer = Message("assistant", reply.text)
            self.messages.append(answer)
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
                reask = Message("user", _reask_text(str(exc), self._n, cut))
                attempt_messages += [answer, reask]
                self.messages.append(reask)
                continue
            if explain:
                self._exchanges.append((asked, answer))
            return parsed


def _reask_text(error: str, n: int, cut: bool) -> str:
    lines = [f"Your reply could not be used: {error}"]
    if cut:
        lines.append("Your reply was cut off by the length limit; keep it shorter.")
    lines.append(f"Reply again with exactly {n} environments in the required format.")
    return "\n".join(lines)
