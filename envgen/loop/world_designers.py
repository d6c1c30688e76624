"""Who writes the environments: the LLM, or a non-LLM baseline (docs/loop.md, "Designers").

Every designer has the LLM designer's surface (`generate(n)` once, `adapt(stats)` per
cycle, `results`, `messages`), so EnvGen, Fixed and the curricula run any of them. The
baselines ask whether the LLM's world knowledge matters:

- `random`, domain randomization over the parameter space the LLM prompt offers;
- `heuristic`: for each of the weakest skills in the feedback, a recipe to practise it;
- `sfl`, Sampling For Learnability: the most learnable of `random`'s worlds for the policy;
- `plr`, PLR-robust: a buffer of worlds replayed by their positive value loss.

`DESIGNERS` registers each by name (`RunConfig.designer`) with its settings and what it
takes from the loop. Replies go through `parse_environments`, the LLM's own validation;
`random` and `heuristic` are exact on every machine, `sfl` and `plr` follow the policy.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar, Protocol

import numpy as np

from envgen.agents.seeding import derive_seed
from envgen.envs.crafter.config import ENV_FIELDS, INVENTORY_MAX
from envgen.errors import ConfigError
from envgen.input_checks import MAX_STEPS, at_most
from envgen.llm.conversation import EnvironmentDesigner, PromptOptions
from envgen.llm.design_spec import design_spec
from envgen.llm.parse import ParsedEnvironments, parse_environments
from envgen.llm.request import LLMCallable, Message
from envgen.loop.learnability import RolloutOutcome, learnability, top_n
from envgen.loop.level_buffer import LevelBuffer

Stats = Mapping[str, tuple[float, float]]  # per skill: mean and std success (%), the feedback
World = dict[str, Any]  # one environment as a reply writes it


class Designer(Protocol):
    """What the loop needs of a designer."""

    options: PromptOptions
    messages: list[Message]
    results: list[ParsedEnvironments]

    def generate(self, n: int) -> ParsedEnvironments: ...

    def adapt(self, success_stats: Stats) -> ParsedEnvironments: ...

    def cycle_record(self) -> dict[str, Any]:
        """What the last call decided besides its worlds (SFL's scores, PLR's buffer), for
        the cycle's environments.json."""
        ...


class LLMDesigner(EnvironmentDesigner):
    """The method: the LLM writes and adapts the worlds (`envgen.llm.conversation`)."""

    def __init__(self, options: PromptOptions, seed: int, *, llm: LLMCallable):
        super().__init__(options, llm)

    def cycle_record(self) -> dict[str, Any]:
        return {}


@dataclasses.dataclass(frozen=True)
class HeuristicSettings:
    """designer heuristic's `RunConfig` field (documented there)."""

    heuristic_first_set: str = "initial_set"


@dataclasses.dataclass(frozen=True)
class RolloutBudget:
    """What a curating designer's rollouts of the current policy play each cycle."""

    candidates: int
    """Worlds played."""
    envs: int
    """Envs per world."""
    steps: int
    """Steps each env plays."""
    value_loss: bool
    """Also measure each world's positive value loss (PLR's score: PPO's GAE)."""

    @property
    def env_steps(self) -> int:
        """Env steps a cycle's rollouts take; they come out of the cycle's budget."""
        return self.candidates * self.envs * self.steps


class CurationSettings:
    """A curating designer's `RunConfig` fields (a dataclass): its first three are
    candidates, rollout envs and rollout steps, named after it (`sfl_candidates`)."""

    replays: ClassVar[int] = 0
    """Worlds played again per world written (PLR: the last cycle's): candidates must be
    at least (1 + replays) x envs_per_call."""
    value_loss: ClassVar[bool] = False
    """Its rollouts also measure each world's positive value loss (PLR)."""

    @property
    def budget(self) -> RolloutBudget:
        fields = dataclasses.fields(self)  # type: ignore[arg-type]
        candidates, envs, steps = (getattr(self, f.name) for f in fields[:3])
        return RolloutBudget(candidates, envs, steps, self.value_loss)

    def check(self) -> None:
        """A `ConfigError` for a setting out of range beyond the budget's (none here)."""


@dataclasses.dataclass(frozen=True)
class SFLSettings(CurationSettings):
    """designer sfl's `RunConfig` fields (documented there)."""

    sfl_candidates: int
    sfl_rollout_envs: int
    sfl_rollout_steps: int


@dataclasses.dataclass(frozen=True)
class PLRSettings(CurationSettings):
    """designer plr's `RunConfig` fields (documented there)."""

    plr_candidates: int
    plr_rollout_envs: int
    plr_rollout_steps: int
    plr_capacity: int
    plr_temperature: float
    plr_staleness: float
    plr_min_fill: float
    replays: ClassVar[int] = 1
    value_loss: ClassVar[bool] = True

    def check(self) -> None:
        if self.plr_capacity < 1:
            raise ConfigError("plr_capacity", "must be >= 1")
        at_most(self.plr_capacity, MAX_STEPS, "plr_capacity", "candidates, envs or steps")
        beta = self.plr_temperature
        if isinstance(beta, bool) or not 0 < beta < float("inf"):  # NaN fails too
            raise ConfigError("plr_temperature", f"{beta!r}: beta of the rank weights, > 0")
        rho, fill = self.plr_staleness, self.plr_min_fill
        if isinstance(rho, bool) or not 0 <= rho <= 1:
            raise ConfigError("plr_staleness", f"{rho!r}: a share in [0, 1]")
        if isinstance(fill, bool) or not 0 < fill <= 1:  # 0 would replay an empty buffer
            raise ConfigError("plr_min_fill", f"{fill!r}: a share in (0, 1]")


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

# Orders of RECIPES whose even spread is first set k of `heuristic_first_set: seed_mod_3`:
# the tech tree, shifted by one (the default's sets of initial sets 0 and 1), and the tool
# ladder at the even steps. With 4 worlds the sets differ pairwise, each spans the tech
# tree, and together they hold every recipe (docs/loop.md, "Designers").
FIRST_SET_ORDERS: tuple[tuple[int, ...], ...] = (
    (0, 1, 2, 3, 4, 5, 6, 7),
    (1, 2, 3, 4, 5, 6, 7, 0),
    (0, 1, 3, 2, 5, 4, 6, 7),
)


class _RuleDesigner:
    """The shared part of the non-LLM designers: conversation record, validation, results."""

    def __init__(self, options: PromptOptions, seed: int):
        self.options = options
        self.seed = seed
        self.messages: list[Message] = []
        self.results: list[ParsedEnvironments] = []
        self._spec = design_spec(options.game)
        self._n = 0

    def cycle_record(self) -> dict[str, Any]:
        return {}

    def generate(self, n: int) -> ParsedEnvironments:
        self._n = n
        prompt = self._spec.prompts.initial_prompt(n, self._spec.name_map(False), True)
        return self._answer(prompt, self.write(n, None))

    def adapt(self, success_stats: Stats) -> ParsedEnvironments:
        prompt = self._spec.prompts.adaptation_prompt(
            self.results[-1].configs, success_stats, self._n, self._spec.name_map(False), True
        )
        return self._answer(prompt, self.write(self._n, success_stats))

    def write(self, n: int, stats: Stats | None) -> list[World]:
        raise NotImplementedError

    def _answer(self, prompt: str, environments: list[World]) -> ParsedEnvironments:
        reply = json.dumps({"environments": environments}, indent=1)
        self.messages += [Message("user", prompt), Message("assistant", reply)]
        parsed = parse_environments(reply, self._n, self.options.game)
        self.results.append(parsed)
        return parsed


class RandomDesigner(_RuleDesigner):
    """Domain randomization over the LLM prompt's parameter space (module docstring)."""

    def write(self, n: int, stats: Stats | None) -> list[World]:
        return sample_worlds(self.seed, self.options.initial_set, len(self.results) + 1, n)


def sample_worlds(seed: int, initial_set: int, cycle: int, n: int) -> list[World]:
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
    """The shared part of SFL and PLR: a seed for `sample_worlds` and the loop's rollout
    of the current policy, which scores worlds."""

    def __init__(self, options: PromptOptions, seed: int, *, rollout: Rollout):
        super().__init__(options, seed)
        self.rollout = rollout

    def play(self, pool: list[World]) -> RolloutOutcome:
        """The policy's rollout on `pool` (worlds as written), as the loop would play
        them: validated by `parse_environments`, in this call's cycle."""
        reply = json.dumps({"environments": pool})
        worlds = parse_environments(reply, len(pool), self.options.game).configs
        return self.rollout(len(self.results) + 1, worlds)


class SFLDesigner(_CuratingDesigner):
    """Sampling For Learnability over domain randomization's worlds (docs/loop.md, "SFL").

    Each cycle it draws `candidates` worlds with `sample_worlds` (the first N are those
    domain randomization trains on), has `rollout` measure the policy's per-achievement
    success on each, and writes the N most learnable. The rollouts are its feedback.
    """

    def __init__(
        self, options: PromptOptions, seed: int, settings: SFLSettings, *, rollout: Rollout
    ):
        super().__init__(options, seed, rollout=rollout)
        self.candidates = settings.sfl_candidates
        self.curations: list[Curation] = []

    def cycle_record(self) -> dict[str, Any]:
        curation = self.curations[-1]
        return {"sfl": {"scores": curation.scores, "chosen": curation.chosen}}

    def write(self, n: int, stats: Stats | None) -> list[World]:
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
    """Buffer slots of the last cycle's worlds, played again first for fresh scores."""
    inserted: tuple[int, ...]
    """Per new candidate, the slot it went to, or -1 if the buffer did not keep it."""
    replay: bool
    """Whether the buffer reached its minimum fill (else: the first N new worlds)."""
    chosen: tuple[int, ...]
    """(N,): buffer slots of the worlds trained on; -1 for a new world it did not keep."""
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

    Each cycle it plays, without training, the distinct buffer worlds the last cycle
    trained on and new worlds from `sample_worlds` up to `plr_candidates`; rescores the
    former and offers the latter to the buffer. Once the buffer holds `plr_min_fill` of
    its capacity, the N worlds are drawn from it (`LevelBuffer.sample`); before, they are
    the first N new ones. So no world is trained on before its score is known.
    """

    def __init__(
        self, options: PromptOptions, seed: int, settings: PLRSettings, *, rollout: Rollout
    ):
        super().__init__(options, seed, rollout=rollout)
        self.settings = settings
        self.buffer = LevelBuffer(
            settings.plr_capacity, settings.plr_temperature, settings.plr_staleness
        )
        self.replays: list[Replay] = []
        self._trained: tuple[int, ...] = ()  # buffer slots of the last cycle's worlds

    def cycle_record(self) -> dict[str, Any]:
        fields = ("rescored", "scores", "inserted", "replay", "chosen", "buffer")
        return {"plr": {name: getattr(self.replays[-1], name) for name in fields}}

    def write(self, n: int, stats: Stats | None) -> list[World]:
        cycle = len(self.results) + 1
        rescored = tuple(dict.fromkeys(self._trained))
        fresh = sample_worlds(
            self.seed, self.options.initial_set, cycle, self.settings.plr_candidates - len(rescored)
        )
        outcome = self.play([self.buffer.levels[slot] for slot in rescored] + fresh)
        if outcome.value_loss is None:
            raise RuntimeError("PLRDesigner.rollout: the rollout did not measure value loss")
        scores = [-np.inf if v is None else v for v in outcome.value_loss]
        for slot, score in zip(rescored, scores[: len(rescored)], strict=True):
            self.buffer.update(slot, score)
        inserted = tuple(
            self.buffer.insert(world, score)
            for world, score in zip(fresh, scores[len(rescored) :], strict=True)
        )
        fill = self.buffer.size / self.buffer.capacity
        replay = self.buffer.size > 0 and fill >= self.settings.plr_min_fill
        if replay:
            rng = np.random.default_rng(
                derive_seed(self.seed, f"plr-replay/set{self.options.initial_set}", cycle)
            )
            chosen = tuple(self.buffer.sample(rng, n))
            written = [self.buffer.levels[slot] for slot in chosen]
            self._trained = chosen
        else:
            chosen = inserted[:n]
            written = fresh[:n]
            self._trained = tuple(slot for slot in chosen if slot >= 0)
        record = Replay(rescored, inserted, replay, chosen, self.buffer.state(), outcome)
        self.replays.append(record)
        return [{**world, "purpose": plr_purpose(record, i)} for i, world in enumerate(written)]


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

    Its first call spreads over the tech tree shifted by the initial set (the default),
    or, under `heuristic_first_set: seed_mod_3`, writes `first_recipes(n, k)` with k =
    (seed + initial set) mod 3.
    """

    def __init__(
        self,
        options: PromptOptions,
        seed: int = 0,
        settings: HeuristicSettings = HeuristicSettings(),
    ):
        super().__init__(options, seed)
        self.first_set: int | None = None
        if settings.heuristic_first_set == "seed_mod_3":
            self.first_set = (seed + options.initial_set) % len(FIRST_SET_ORDERS)

    def write(self, n: int, stats: Stats | None) -> list[World]:
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


def weakest_recipes(stats: Stats | None, n: int, offset: int = 0) -> list[Recipe]:
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


# --- the registry: `RunConfig.designer` -> its class, its settings, what it takes -----
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
