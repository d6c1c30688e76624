"""How well an LLM designs worlds, measured on its recorded replies.

Three numbers per Crafter reply, the first two per Heist reply (no adaptation at N_cycle
= 1; docs/llm.md, "Design quality"), from the cache files alone, without training:

- **distinct**: how many of the N worlds differ (environment and inventory settings as
  validated; the purpose line is ignored);
- **out of range**: values the reply wrote outside their range (the clamping warnings of
  the game's `from_dict`), over all worlds' values;
- **toward weakness** (adaptations only): for the W = 5 weakest skills of the feedback
  answered (lowest mean success; ties in the game's order), the share each world
  *supports*, averaged over the worlds, new set minus the set just trained in (positive:
  toward the agent's weaknesses). A world supports skill s when it gives what the
  heuristic designer's recipe for s gives (`envgen.loop.world_designers.RECIPES`): its
  biome if named, each resource at least as common, each item handed over at least 1;
  a yardstick of this project, not the paper's (a world can train a skill otherwise).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
import sys
from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

from envgen.envs.crafter.config import INVENTORY_MAX, RARITIES, CrafterConfig
from envgen.envs.game_rules import GAME_RULES
from envgen.errors import EnvGenError, LLMResponseError
from envgen.files import write_json_atomic
from envgen.llm.cache import DEFAULT_CACHE_DIR, ResponseCache
from envgen.llm.conversation import REASK_SUFFIX, REDRAW_SUFFIX, base_label
from envgen.llm.parse import parse_environments, settings_key
from envgen.llm.slots import FEEDBACK_LINE
from envgen.loop.world_designers import RECIPES, Recipe
from envgen.store.run_dir import RunDir, read_json

_LABEL = re.compile(
    r"^(?P<game>crafter|heist)/(?P<stage>initial|adapt\d+)/n(?P<n>\d+)(?P<obf>/obfuscated)?/set\d+"
    r"(?P<redraw>/redraw\d+)?(?P<reask>/reask\d+)?$"
)


def supports(config: CrafterConfig, recipe: Recipe) -> bool:
    """Whether `config` gives what `recipe` gives (module docstring)."""
    settings = config.to_dict()["environment_settings"]
    inventory = dict(config.inventory)
    for field, wanted in recipe.settings.items():
        have = settings.get(field)
        if field.endswith("_rarity"):
            if RARITIES.index(have) > RARITIES.index(wanted):  # RARITIES: commonest first
                return False
        elif have != wanted:
            return False
    return all(inventory.get(item, 0) >= 1 for item in recipe.inventory)


def skill_support(configs: Sequence[CrafterConfig], skills: Sequence[str]) -> float:
    """Mean over worlds of the share of `skills` each world supports."""
    recipe_of = {s: r for r in RECIPES for s in r.skills}
    shares = [sum(supports(c, recipe_of[s]) for s in skills) / len(skills) for c in configs]
    return sum(shares) / len(shares)


def weakest(feedback: str, count: int = 5) -> list[str]:
    """The `count` skills with the lowest mean in the newest feedback lines of `feedback`."""
    rates = [
        (float(m["mean"]), i, m["head"][2:-2])
        for i, m in enumerate(FEEDBACK_LINE.finditer(feedback))
    ]
    return [name for _, _, name in sorted(rates)[:count]]


@dataclasses.dataclass(frozen=True)
class ReplyQuality:
    label: str
    n: int
    distinct: int
    out_of_range: int
    values: int
    toward_weakness: float | None  # Crafter adaptations only
    usable: bool = True
    game: str = "crafter"


def reply_quality(entry: Mapping[str, Any]) -> ReplyQuality | None:
    """The measures of one cache entry of a designer call (None for other calls)."""
    match = _LABEL.match(entry.get("label", ""))
    if match is None:
        return None
    game, n, obfuscated = match["game"], int(match["n"]), bool(match["obf"])
    try:
        parsed = parse_environments(entry["response"]["text"], n, game, obfuscated=obfuscated)
    except LLMResponseError:  # re-asked (the re-ask's reply is its own entry)
        return ReplyQuality(entry["label"], n, 0, 0, 0, None, usable=False, game=game)
    clamped = sum("out of range" in w for w in parsed.warnings)
    fields = sum(_values(c, game) for c in parsed.configs)
    toward = None
    base_adaptation = GAME_RULES[game].base and match["stage"] != "initial"
    if base_adaptation and not obfuscated and not match["reask"]:
        messages = entry["request"]["messages"]
        last = messages[-1]["content"]
        previous_text = last if "```json" in last else messages[-2]["content"]
        previous = parse_environments(previous_text, n, "crafter").configs
        skills = weakest(last)
        toward = skill_support(parsed.configs, skills) - skill_support(previous, skills)
    return ReplyQuality(
        entry["label"],
        n,
        len({settings_key(c) for c in parsed.configs}),
        clamped,
        fields,
        None if toward is None else round(toward, 3),
        game=game,
    )


def _values(config: Any, game: str) -> int:
    """Values a world offers to set: every setting and, in Crafter, all 12 items (its
    inventory lists only the items it hands over)."""
    data = config.to_dict()
    items = len(INVENTORY_MAX) if GAME_RULES[game].base else len(data["inventory_settings"])
    return len(data["environment_settings"]) + items


def select(
    groups: Mapping[tuple[str, float], list[ReplyQuality]], model: str, temperature: float | None
) -> list[ReplyQuality]:
    """The replies of `model` (at `temperature`, if given) among `groups`, by label."""
    keys = [key for key in groups if key[0] == model and temperature in (None, key[1])]
    return sorted((q for key in keys for q in groups[key]), key=lambda q: q.label)


def measure_groups(
    cache_dir: Path, keys: Collection[str] | None = None
) -> dict[tuple[str, float], list[ReplyQuality]]:
    """Every Crafter reply in the cache (of `keys` only, if given), grouped by (model,
    temperature)."""
    groups: dict[tuple[str, float], list[ReplyQuality]] = {}
    for key, entry in ResponseCache(cache_dir).entries():
        if keys is not None and key not in keys:
            continue
        quality = reply_quality(entry)
        if quality is not None:
            request = entry["request"]
            groups.setdefault((request["model"], request["temperature"]), []).append(quality)
    return groups


def run_keys(run_dirs: Sequence[Path]) -> set[str]:
    """The cache keys of the calls the runs under `run_dirs` made (each run's LLM call
    log; a config directory stands for all its seeds)."""
    keys: set[str] = set()
    for root in run_dirs:
        runs = [RunDir(root), *RunDir.seeds_of(root)]
        files = [r.llm_calls for r in runs if r.llm_calls.is_file()]
        if not files:
            name = RunDir(root).llm_calls.name
            raise EnvGenError(f"{root}: no {name} here or in its seed-* folders")
        for path in files:
            calls = read_json(path)
            if not isinstance(calls, list):
                raise EnvGenError(f"{path}: not a list of calls")
            keys.update(str(call.get("key", "")) for call in calls if isinstance(call, dict))
    return keys


def summarize(rows: Sequence[ReplyQuality]) -> dict[str, Any]:
    """The measures of `rows` in a few counts: replies (re-asks included), those with
    every world distinct and how many had each number of distinct worlds, the initial
    sets whose first reply has every world distinct and those where it or a redraw does
    (the reply a run with `llm_redraw_repeats` uses), each initial set's distinct worlds
    draw by draw, values out of range, adaptations toward weakness."""
    moves = [q.toward_weakness for q in rows if q.toward_weakness is not None]
    initial_replies = [q for q in rows if "/initial/" in q.label and q.n > 1]
    initial = [q for q in initial_replies if base_label(q.label) == q.label]
    distinct_after_redraw = {
        base_label(q.label) for q in initial_replies if q.usable and q.distinct == q.n
    }
    by_draw = _distinct_by_draw(initial_replies)
    return {
        "replies": len(rows),
        "unusable": sum(not q.usable for q in rows),
        "all_distinct": sum(q.usable and q.distinct == q.n for q in rows),
        "distinct_of_n": _distinct_of_n(rows),
        "initial_sets": len(initial),
        "initial_sets_all_distinct": sum(q.usable and q.distinct == q.n for q in initial),
        "initial_sets_all_distinct_after_redraw": len(distinct_after_redraw),
        "initial_set_distinct_by_draw": by_draw,
        "out_of_range": sum(q.out_of_range for q in rows),
        "values": sum(q.values for q in rows),
        "adaptations": len(moves),
        "toward_weakness_mean": round(sum(moves) / len(moves), 3) if moves else None,
        "toward_weakness_positive": sum(m > 0 for m in moves),
    }


def _distinct_of_n(rows: Sequence[ReplyQuality]) -> dict[str, int]:
    """How many usable replies had k distinct worlds of their n, as {"k of n": replies},
    most distinct first."""
    pairs = sorted(((q.n, q.distinct) for q in rows if q.usable), reverse=True)
    return dict(Counter(f"{k} of {n}" for n, k in pairs))


def _distinct_by_draw(replies: Sequence[ReplyQuality]) -> dict[str, list[int | None]]:
    """Each initial set's distinct worlds, by draw number (0 the first draw, k redraw k):
    those of the draw's first usable reply (a re-ask answers for its draw); None where the
    draw has no usable reply, or no reply among `replies` (e.g. filtered out by --runs)."""
    # set -> draw -> (re-ask, distinct) of its first usable reply, or None (none usable)
    by_set: dict[str, dict[int, tuple[int, int] | None]] = {}
    for q in replies:
        match = _LABEL.match(q.label)
        if match is None:
            continue
        draw = int(match["redraw"][len(REDRAW_SUFFIX) :]) if match["redraw"] else 0
        reask = int(match["reask"][len(REASK_SUFFIX) :]) if match["reask"] else 0
        draws = by_set.setdefault(base_label(q.label), {})
        earlier = draws.setdefault(draw, None)
        if q.usable and (earlier is None or reask < earlier[0]):
            draws[draw] = (reask, q.distinct)
    return {
        name: [None if (best := draws.get(d)) is None else best[1] for d in range(max(draws) + 1)]
        for name, draws in sorted(by_set.items())
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0]
        + " One model's replies, a line each (--model), or every model's summary (--out)."
    )
    parser.add_argument("--model", help="print this model's replies, a line each, and a summary")
    parser.add_argument(
        "--temperature",
        type=float,
        help="with --model: only the replies sampled at this temperature (a run's "
        "llm_temperature; default: all)",
    )
    parser.add_argument("--cache-dir", type=Path, default=DEFAULT_CACHE_DIR)
    parser.add_argument(
        "--runs",
        type=Path,
        nargs="+",
        help="only the calls these runs made (run or config directories, e.g. "
        "results/runs/71f7ee870351: a campaign arm's replies)",
    )
    parser.add_argument(
        "--out", type=Path, help="write the summary of every (model, temperature) as JSON"
    )
    args = parser.parse_args(argv)
    if not (args.model or args.out):
        parser.error("give --model M (one model's replies) or --out FILE (every model)")
    try:
        keys = run_keys(args.runs) if args.runs else None
        groups = measure_groups(args.cache_dir, keys)
    except EnvGenError as exc:
        print(f"envgen.report.design_quality: {exc}", file=sys.stderr)
        return 1
    if args.out:
        summaries = {
            f"{_prefix(game)}{model} @ temperature {temperature:g}": summarize(game_rows)
            for (model, temperature), rows in sorted(groups.items())
            for game, game_rows in by_game(rows).items()
        }
        write_json_atomic(args.out, dict(sorted(summaries.items())))
    if args.model:
        rows = select(groups, args.model, args.temperature)
        for q in rows:
            if not q.usable:
                first_reply = base_label(q.label) == q.label  # an unusable one is re-asked
                print(f"{q.label:34s} unusable" + (" (re-asked)" if first_reply else ""))
                continue
            toward = q.toward_weakness
            print(
                f"{q.label:34s} distinct {q.distinct}/{q.n}  "
                f"out of range {q.out_of_range}/{q.values}"
                + ("" if toward is None else f"  toward weakness {toward:+.3f}")
            )
        for game, game_rows in by_game(rows).items():
            print(_prefix(game) + json.dumps(summarize(game_rows)))
    return 0


def by_game(rows: Sequence[ReplyQuality]) -> dict[str, list[ReplyQuality]]:
    """`rows` split by game, Crafter first."""
    games: dict[str, list[ReplyQuality]] = {}
    for q in sorted(rows, key=lambda q: (not GAME_RULES[q.game].base, q.game)):
        games.setdefault(q.game, []).append(q)
    return games


def _prefix(game: str) -> str:
    """Crafter's summaries are named by model alone (as before Heist was measured)."""
    return "" if GAME_RULES[game].base else f"{game}: "


if __name__ == "__main__":
    sys.exit(main())
