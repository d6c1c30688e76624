"""Who writes the environments: the LLM, or one of three non-LLM baselines (docs/loop.md).

Every designer has the LLM designer's surface (`generate(n)` once, `adapt(stats)` per
cycle, `results`, `messages`), so the EnvGen loop, Fixed and the curricula run any of
them unchanged. The baselines answer the question a reviewer asks first: does the
LLM's world knowledge matter, or would any varied (`random`), feedback-driven
(`heuristic`) or learned-curriculum (`sfl`, `plr`) environments do?

- `random` (domain randomization, the standard baseline of environment design: PAIRED,
  PLR, ACCEL): each call samples N configurations uniformly from exactly the parameter
  space the LLM prompt offers (every environment setting over its allowed values, every
  inventory item over 0..its maximum), seeded by the run seed, initial set and cycle.
- `heuristic` (adaptive, rule-based): reads the same per-skill feedback the LLM reads,
  targets the weakest skills and writes, for each, the recipe of `RECIPES` that makes it
  easy to practise. Its first call, before any feedback, spreads over the tech tree: by
  default shifted by the initial set (every seed the same first set), or, opted into,
  one of three first sets by seed (`FIRST_SET_ORDERS`), as the paper's 3 sets x 10 seeds.
- `sfl` (Sampling For Learnability, `SFLDesigner`): each call draws more worlds with
  `random`'s sampler, has the current policy play them and writes the N most learnable
  (`envgen.loop.learnability`); the runner binds its rollout.
- `plr` (PLR-robust, `PLRDesigner`): keeps a buffer of worlds scored by the policy's
  positive value loss, scores new worlds from `random`'s sampler without training on
  them, and writes N worlds replayed from the buffer by rank and staleness
  (`envgen.loop.level_buffer`); the runner binds its rollout as for `sfl`.

Their replies are JSON text that goes through `parse_environments`, the LLM's own
validation; the adaptation prompt an LLM would have read is kept in `messages` (the
run's feedback.txt). They make no LLM call and need no cache; `random` and `heuristic`
are exact on every machine, while `sfl`'s and `plr`'s choices follow the policy's
rollouts.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

import numpy as np

from envgen.agents.seeding import derive_seed
from envgen.envs.crafter.config import ENV_FIELDS, INVENTORY_MAX
from envgen.llm.conversation import EnvironmentDesigner, PromptOptions
from envgen.llm.design_spec import design_spec
from envgen.llm.parse import ParsedEnvironments, parse_environments
from envgen.llm.request import LLMCallable, Message
from envgen.loop.config import DESIGNERS, PLRSettings
from envgen.loop.learnability import RolloutOutcome, learnability, top_n
from envgen.loop.level_buffer import LevelBuffer


class Designer(Protocol):
    """What the loop needs of a designer."""

    options: PromptOptions
    messages: list[Message]
    results: list[ParsedEnvironments]

    def generate(self, n: int) -> ParsedEnvironments: ...

    def adapt(self, success_stats: Mapping[str, tuple[float, float]]) -> ParsedEnvironments: ...


@dataclasses.dataclass(frozen=True, eq=False)  # compared by identity: RECIPES holds each once
class Recipe:
    """An environment that makes a group of skills easy to practise, and why."""

    skills: tuple[str, ...]
    """The achievements it targets."""
    purpose: str
    """The environment's purpose line (and the reason for its settings)."""
    settings: Mapping[str, str]
    """Environment settings (the rest keep stock Crafter's)."""
    inventory: Mapping[str, int]
    """Starting items."""


# Skill -> recipe, in Crafter's tech-tree order (docs/loop.md has the table and reasons).
RECIPES: tuple[Recipe, ...] = (
    Recipe(
        ("collect_wood", "place_table", "make_wood_pickaxe", "make_wood_sword"),
        "grassland dense with trees and wood in hand: collect wood, place a table, craft "
        "wood tools",
        {"target_biome": "grassland", "tree_rarity": "very_common"},
        {"wood": 3},
    ),
    Recipe(
        ("collect_sapling", "place_plant", "eat_plant"),
        "open grassland with saplings in hand: collect and plant saplings, eat the plant",
        {"target_biome": "grassland"},
        {"sapling": 3},
    ),
    Recipe(
        ("collect_drink", "eat_cow", "wake_up"),
        "the original mix of biomes: water, cows and a safe place to sleep",
        {"target_biome": "natural"},
        {},
    ),
    Recipe(
        ("collect_stone", "place_stone", "make_stone_pickaxe", "make_stone_sword"),
        "mountains with a wood pickaxe, wood and a table's worth of wood: mine stone, place "
        "it, craft stone tools",
        {"target_biome": "mountain"},
        {"wood_pickaxe": 1, "wood": 5},
    ),
    Recipe(
        ("collect_coal", "place_furnace"),
        "mountains rich in coal with a wood pickaxe and stone: mine coal, build a furnace",
        {"target_biome": "mountain", "coal_rarity": "very_common"},
        {"wood_pickaxe": 1, "wood": 3, "stone": 5},
    ),
    Recipe(
        ("collect_iron", "make_iron_pickaxe", "make_iron_sword"),
        "mountains rich in iron and coal with a stone pickaxe, wood, coal and stone: mine "
        "iron, craft iron tools at a table and furnace",
        {"target_biome": "mountain", "iron_rarity": "very_common", "coal_rarity": "very_common"},
        {"wood_pickaxe": 1, "stone_pickaxe": 1, "wood": 5, "coal": 2, "stone": 3},
    ),
    Recipe(
        ("collect_diamond",),
        "mountains rich in diamonds with an iron pickaxe: find and mine diamonds",
        {"target_biome": "mountain", "diamond_rarity": "very_common"},
        {"iron_pickaxe": 1, "stone_pickaxe": 1, "wood_pickaxe": 1},  # as the loader implies
    ),
    Recipe(
        ("defeat_zombie", "defeat_skeleton"),
        "mountains (skeletons live in caves) with a stone sword: fight zombies and skeletons",
        {"target_biome": "mountain"},
        {"stone_sword": 1, "wood_pickaxe": 1},
    ),
)
RECIPE_OF: dict[str, Recipe] = {s: r for r in RECIPES for s in r.skills}

# Three orders of RECIPES (indices) whose even spread is the heuristic's first set k under
# `heuristic_first_set: seed_mod_3` (`first_recipes`). Order 0 is the tech tree and order
# 1 the tech tree shifted by one, so sets 0 and 1 are the default's first sets of initial
# sets 0 and 1; order 2 puts the tool ladder (wood, stone, iron, diamond) at the even
# steps. With 4 environments: set 0 wood / drink-cow-sleep / coal-furnace / diamond, set 1
# sapling / stone / iron / combat, set 2 wood / stone / iron / diamond: pairwise different,
# each spanning the tech tree, together every recipe (docs/loop.md, "Designers").
FIRST_SET_ORDERS: tuple[tuple[int, ...], ...] = (
    (0, 1, 2, 3, 4, 5, 6, 7),
    (1, 2, 3, 4, 5, 6, 7, 0),
    (0, 1, 3, 2, 5, 4, 6, 7),
)


class _RuleDesigner:
    """The shared part of the non-LLM designers: conversation record, validation, results."""

    def __init__(self, options: PromptOptions):
        self.options = options
        self.messages: list[Message] = []
        self.results: list[ParsedEnvironments] = []
        self._spec = design_spec(options.game)
        self._n = 0

    def generate(self, n: int) -> ParsedEnvironments:
        self._n = n
        prompt = self._spec.prompts.initial_prompt(n, self._spec.name_map(False), True)
        return self._answer(prompt, self.write(n, None))

    def adapt(self, success_stats: Mapping[str, tuple[float, float]]) -> ParsedEnvironments:
        prompt = self._spec.prompts.adaptation_prompt(
            self.results[-1].configs, success_stats, self._n, self._spec.name_map(False), True
        )
        return self._answer(prompt, self.write(self._n, success_stats))

    def write(
        self, n: int, stats: Mapping[str, tuple[float, float]] | None
    ) -> list[dict[str, Any]]:
        raise NotImplementedError

    def _answer(self, prompt: str, environments: list[dict[str, Any]]) -> ParsedEnvironments:
        reply = json.dumps({"environments": environments}, indent=1)
        self.messages += [Message("user", prompt), Message("assistant", reply)]
        parsed = parse_environments(reply, self._n, self.options.game)
        self.results.append(parsed)
        return parsed


class RandomDesigner(_RuleDesigner):
    """Domain randomization over the LLM prompt's parameter space (module docstring)."""

    def __init__(self, options: PromptOptions, seed: int):
        super().__init__(options)
        self.seed = seed

    def write(
        self, n: int, stats: Mapping[str, tuple[float, float]] | None
    ) -> list[dict[str, Any]]:
        return sample_worlds(self.seed, self.options.initial_set, len(self.results) + 1, n)


def sample_worlds(seed: int, initial_set: int, cycle: int, n: int) -> list[dict[str, Any]]:
    """Domain randomization's `n` worlds of `cycle`: each setting uniform over its allowed
    values, each item over 0..its maximum, from a seed derived from (seed, initial set,
    cycle). The first k of n are the k a call for k draws (one stream, in order)."""
    rng = np.random.default_rng(derive_seed(seed, f"random-designer/set{initial_set}", cycle))
    return [
        {
            "purpose": "uniformly sampled (domain randomization)",
            "environment_settings": {
                field: str(rng.choice(allowed)) for field, allowed in ENV_FIELDS.items()
            },
            "inventory_settings": {
                item: int(rng.integers(0, hi + 1)) for item, hi in INVENTORY_MAX.items()
            },
        }
        for _ in range(n)
    ]


# (cycle, candidate worlds as they are played) -> what the policy's rollouts on them measured
Rollout = Callable[[int, Sequence[Any]], RolloutOutcome]


@dataclasses.dataclass(frozen=True)
class Curation:
    """One SFL cycle: the candidates' learnability and which were kept."""

    scores: tuple[float, ...]
    """(M,): learnability of each candidate (`envgen.loop.learnability.learnability`)."""
    chosen: tuple[int, ...]
    """Candidate indices kept, most learnable first (`top_n`)."""
    outcome: RolloutOutcome
    """The rollouts the scores come from."""


class _CuratingDesigner(_RuleDesigner):
    """The shared part of SFL and PLR: a seed for `sample_worlds` and the policy's
    rollout, bound by the runner once the policy exists, that scores worlds."""

    def __init__(self, options: PromptOptions, seed: int):
        super().__init__(options)
        self.seed = seed
        self.rollout: Rollout | None = None

    def play(self, pool: list[dict[str, Any]]) -> RolloutOutcome:
        """The policy's rollout on `pool` (worlds as written), as the loop would play
        them: validated by `parse_environments`, in this call's cycle."""
        if self.rollout is None:
            raise RuntimeError(
                f"{type(self).__name__}.rollout: bind the policy's rollout before asking"
            )
        reply = json.dumps({"environments": pool})
        worlds = parse_environments(reply, len(pool), self.options.game).configs
        return self.rollout(len(self.results) + 1, worlds)


class SFLDesigner(_CuratingDesigner):
    """Sampling For Learnability over domain randomization's worlds (docs/loop.md, "SFL").

    Each call (every cycle) draws `candidates` worlds with `sample_worlds` (so its first
    N are the N domain randomization trains on at the same seed and cycle), has
    `rollout` measure the current policy's per-achievement success on each, and writes
    the N of highest learnability. The feedback it is given is not read: the rollouts
    are its feedback. `rollout` is bound by the runner once the policy exists.
    """

    def __init__(self, options: PromptOptions, seed: int, candidates: int):
        super().__init__(options, seed)
        self.candidates = candidates
        self.curations: list[Curation] = []

    def write(
        self, n: int, stats: Mapping[str, tuple[float, float]] | None
    ) -> list[dict[str, Any]]:
        cycle = len(self.results) + 1
        pool = sample_worlds(self.seed, self.options.initial_set, cycle, self.candidates)
        outcome = self.play(pool)
        scores = learnability(outcome.rates)
        chosen = top_n(scores, n)
        self.curations.append(Curation(tuple(scores.tolist()), tuple(chosen), outcome))
        return [
            {
                **pool[i],
                "purpose": f"SFL: candidate {i} of {self.candidates}, learnability "
                f"{scores[i]:.3f} (rank {rank + 1})",
            }
            for rank, i in enumerate(chosen)
        ]


@dataclasses.dataclass(frozen=True)
class Replay:
    """One PLR cycle: what was scored, what the buffer kept, and what is trained on."""

    rescored: tuple[int, ...]
    """Buffer slots of the previous cycle's worlds, played again for fresh scores (first
    among the candidates)."""
    inserted: tuple[int, ...]
    """Per new candidate, the slot it went to, or -1 if the buffer did not keep it."""
    replay: bool
    """Whether the buffer had reached its minimum fill, so the cycle replays from it;
    otherwise it trains on domain randomization's first N new worlds."""
    chosen: tuple[int, ...]
    """(N,): buffer slots of the worlds trained on; -1 for a new world (no replay) the
    buffer did not keep."""
    buffer: dict[str, Any]
    """`LevelBuffer.state()` after the cycle's draws."""
    outcome: RolloutOutcome
    """The rollouts the scores come from."""

    @property
    def scores(self) -> tuple[float | None, ...]:
        """(C,): positive value loss of each world played (None: no finished episode)."""
        assert self.outcome.value_loss is not None
        return self.outcome.value_loss


class PLRDesigner(_CuratingDesigner):
    """PLR-robust over domain randomization's worlds (docs/loop.md, "PLR-robust").

    Each call (every cycle) plays again the distinct buffer worlds the previous cycle
    trained on and as many new worlds from `sample_worlds` as make `settings.candidates`
    in all (all new in cycle 1), without training; updates those scores and offers the
    new worlds to the buffer (`LevelBuffer.insert`). Once it holds `settings.min_fill` of its
    capacity, the N worlds are drawn from it by `LevelBuffer.sample`, with replacement;
    before that they are the first N new worlds. So, as in robust PLR, no world is
    trained on before its score is known, and a replayed world's score is refreshed.
    """

    def __init__(self, options: PromptOptions, seed: int, settings: PLRSettings):
        super().__init__(options, seed)
        self.settings = settings
        self.buffer = LevelBuffer(settings.capacity, settings.temperature, settings.staleness)
        self.replays: list[Replay] = []
        self._trained: list[int] = []  # buffer slots of the last cycle's worlds

    def write(
        self, n: int, stats: Mapping[str, tuple[float, float]] | None
    ) -> list[dict[str, Any]]:
        cycle = len(self.results) + 1
        rescored = list(dict.fromkeys(self._trained))
        fresh = sample_worlds(
            self.seed, self.options.initial_set, cycle, self.settings.candidates - len(rescored)
        )
        outcome = self.play([self.buffer.levels[slot] for slot in rescored] + fresh)
        if outcome.value_loss is None:
            raise RuntimeError("PLRDesigner.rollout: the rollout did not measure value loss")
        scores = [-np.inf if v is None else v for v in outcome.value_loss]
        for slot, score in zip(rescored, scores[: len(rescored)], strict=True):
            self.buffer.update(slot, score)
        inserted = [
            self.buffer.insert(world, score)
            for world, score in zip(fresh, scores[len(rescored) :], strict=True)
        ]
        replay = self.buffer.size > 0 and self.buffer.fill() >= self.settings.min_fill
        if replay:
            rng = np.random.default_rng(
                derive_seed(self.seed, f"plr-replay/set{self.options.initial_set}", cycle)
            )
            chosen = self.buffer.sample(rng, n)
            written = [self.buffer.levels[slot] for slot in chosen]
            self._trained = chosen
        else:
            chosen = inserted[:n]
            written = fresh[:n]
            self._trained = [slot for slot in chosen if slot >= 0]
        self.replays.append(
            Replay(
                tuple(rescored),
                tuple(inserted),
                replay,
                tuple(chosen),
                self.buffer.state(),
                outcome,
            )
        )
        return [
            {**world, "purpose": plr_purpose(self.replays[-1], i)}
            for i, world in enumerate(written)
        ]


def plr_purpose(replay: Replay, i: int) -> str:
    """The purpose line of the i-th world a PLR cycle trains on."""
    if not replay.replay:
        return "PLR: a new world of domain randomization (the buffer is below its minimum fill)"
    slot = replay.chosen[i]
    score = replay.buffer["scores"][slot]
    shown = "none" if score is None else f"{score:.4f}"
    return f"PLR: replay of buffer slot {slot} (positive value loss {shown})"


class HeuristicDesigner(_RuleDesigner):
    """Recipes for the weakest skills (module docstring; `weakest_recipes`).

    `first_set`: None, the first call's spread shifted by the initial set (the default);
    k in 0..2, the first call writes `first_recipes(n, k)` instead.
    """

    def __init__(self, options: PromptOptions, first_set: int | None = None):
        super().__init__(options)
        self.first_set = first_set

    def write(
        self, n: int, stats: Mapping[str, tuple[float, float]] | None
    ) -> list[dict[str, Any]]:
        if stats is None and self.first_set is not None:
            recipes = first_recipes(n, self.first_set)
        else:
            recipes = weakest_recipes(stats, n, self.options.initial_set)
        return [
            {
                "purpose": r.purpose,
                "environment_settings": dict(r.settings),
                "inventory_settings": dict(r.inventory),
            }
            for r in recipes
        ]


def weakest_recipes(
    stats: Mapping[str, tuple[float, float]] | None, n: int, offset: int = 0
) -> list[Recipe]:
    """The recipes of the `n` weakest skill groups.

    A group's strength is its skills' mean success; the weakest comes first, ties in
    tech-tree order (the easier group first: it unlocks the next). Every group is
    reachable, since its recipe hands over the tools its skills need. Without feedback
    (cycle 1) all tie, so the first call spreads over the tech tree instead: recipes at
    even steps, shifted by the initial set. More environments than recipes repeat them.
    """
    if stats is None:
        step = len(RECIPES) / n
        return [RECIPES[(int(i * step) + offset) % len(RECIPES)] for i in range(n)]
    ranked = sorted(
        range(len(RECIPES)),
        key=lambda i: (sum(stats[s][0] for s in RECIPES[i].skills) / len(RECIPES[i].skills), i),
    )
    return [RECIPES[ranked[i % len(ranked)]] for i in range(n)]


def first_recipes(n: int, k: int) -> list[Recipe]:
    """First set k (0-2) of `heuristic_first_set: seed_mod_3`: n recipes at even steps of
    `FIRST_SET_ORDERS[k]` (more environments than recipes repeat them, as the default)."""
    order = FIRST_SET_ORDERS[k]
    step = len(order) / n
    return [RECIPES[order[int(i * step) % len(order)]] for i in range(n)]


def make_designer(
    kind: str,
    options: PromptOptions,
    seed: int,
    llm: LLMCallable | None,
    heuristic_first_set: str = "initial_set",
    sfl_candidates: int = 16,
    plr: PLRSettings | None = None,
) -> Designer:
    """The designer `kind` (`DESIGNERS`); `llm` is needed by the LLM designer only;
    `heuristic_first_set` and `sfl_candidates` as the `RunConfig` fields of those names,
    `plr` the plr_* fields (`RunConfig.plr_settings`)."""
    if kind == "llm":
        assert llm is not None
        return EnvironmentDesigner(options, llm)
    if kind == "random":
        return RandomDesigner(options, seed)
    if kind == "sfl":
        return SFLDesigner(options, seed, sfl_candidates)
    if kind == "plr":
        assert plr is not None, "make_designer: the plr designer needs its PLRSettings"
        return PLRDesigner(options, seed, plr)
    if kind == "heuristic":
        if heuristic_first_set == "seed_mod_3":
            first = (seed + options.initial_set) % len(FIRST_SET_ORDERS)
            return HeuristicDesigner(options, first)
        return HeuristicDesigner(options)
    raise ValueError(f"designer {kind!r}; allowed: {', '.join(DESIGNERS)}")
