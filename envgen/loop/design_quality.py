"""How well an LLM designs Crafter worlds, measured on its recorded replies.

Three numbers per reply (docs/llm.md, "Design quality"), computed from the cache files
alone, so any recorded model can be compared without training:

- **distinct**: how many of the N worlds differ (environment and inventory settings as
  validated; the purpose line is ignored);
- **out of range**: how many values the reply wrote outside their allowed range (the
  clamping warnings of `CrafterConfig.from_dict`), over all worlds' values;
- **toward weakness** (adaptations only): the W = 5 weakest skills of the feedback the
  reply answered (lowest mean success; ties in the game's order), and the share of those
  skills that each world *supports*, averaged over the worlds, for the new set minus the
  set the agent had just trained in. Positive: the adaptation moved toward the agent's
  weaknesses. A world supports skill s when it gives what the heuristic designer's
  recipe for s gives (`envgen.loop.world_designers.RECIPES`): the recipe's biome if it
  names one, each of its resources at least as common as the recipe's, and every item
  the recipe hands over at a count of at least 1. The recipe is a yardstick written for
  this project, not the paper's: a world can train a skill in ways it does not list.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from envgen.envs.crafter.config import RARITIES, CrafterConfig
from envgen.errors import EnvGenError, LLMResponseError
from envgen.llm.cache import DEFAULT_CACHE_DIR, ResponseCache
from envgen.llm.parse import parse_environments
from envgen.llm.slots import FEEDBACK_LINE
from envgen.loop.world_designers import RECIPES, Recipe

WEAKEST = 5
_LABEL = re.compile(
    r"^crafter/(?P<stage>initial|adapt\d+)/n(?P<n>\d+)(?P<obf>/obfuscated)?/set\d+$"
)


def world_key(config: CrafterConfig) -> str:
    data = config.to_dict()
    return json.dumps([data["environment_settings"], data["inventory_settings"]], sort_keys=True)


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


def weakest(feedback: str, count: int = WEAKEST) -> list[str]:
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
    toward_weakness: float | None  # adaptations only
    usable: bool = True

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def reply_quality(entry: Mapping[str, Any]) -> ReplyQuality | None:
    """The measures of one cache entry of a Crafter call (None for other calls)."""
    match = _LABEL.match(entry.get("label", ""))
    if match is None:
        return None
    n, obfuscated = int(match["n"]), bool(match["obf"])
    try:
        parsed = parse_environments(entry["response"]["text"], n, "crafter", obfuscated=obfuscated)
    except LLMResponseError:  # re-asked (the re-ask's reply is its own entry)
        return ReplyQuality(entry["label"], n, 0, 0, 0, None, usable=False)
    clamped = sum("out of range" in w for w in parsed.warnings)
    fields = sum(len(c.to_dict()["environment_settings"]) + 12 for c in parsed.configs)
    toward = None
    if match["stage"] != "initial" and not obfuscated:
        messages = entry["request"]["messages"]
        last = messages[-1]["content"]
        previous_text = last if "```json" in last else messages[-2]["content"]
        previous = parse_environments(previous_text, n, "crafter").configs
        skills = weakest(last)
        toward = skill_support(parsed.configs, skills) - skill_support(previous, skills)
    return ReplyQuality(
        entry["label"],
        n,
        len({world_key(c) for c in parsed.configs}),
        clamped,
        fields,
        None if toward is None else round(toward, 3),
    )


def measure(cache_dir: Path, model: str, temperature: float | None = None) -> list[ReplyQuality]:
    """Every Crafter reply of `model` in the cache (at `temperature`, if given), by label."""
    found = []
    for _, entry in ResponseCache(cache_dir).entries():
        request = entry["request"]
        if request["model"] == model and temperature in (None, request["temperature"]):
            quality = reply_quality(entry)
            if quality is not None:
                found.append(quality)
    return sorted(found, key=lambda q: q.label)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", required=True)
    parser.add_argument(
        "--temperature",
        type=float,
        help="only the replies sampled at this temperature (a run's llm_temperature; default: all)",
    )
    parser.add_argument("--cache-dir", type=Path, default=DEFAULT_CACHE_DIR)
    args = parser.parse_args(argv)
    try:
        rows = measure(args.cache_dir, args.model, args.temperature)
    except EnvGenError as exc:
        print(f"envgen.loop.design_quality: {exc}", file=sys.stderr)
        return 1
    for q in rows:
        if not q.usable:
            print(f"{q.label:34s} unusable (re-asked)")
            continue
        toward = "" if q.toward_weakness is None else f"  toward weakness {q.toward_weakness:+.3f}"
        print(
            f"{q.label:34s} distinct {q.distinct}/{q.n}  out of range {q.out_of_range}/{q.values}"
            + toward
        )
    moves = [q.toward_weakness for q in rows if q.toward_weakness is not None]
    summary = {
        "replies": len(rows),
        "unusable": sum(not q.usable for q in rows),
        "all_distinct": sum(q.usable and q.distinct == q.n for q in rows),
        "out_of_range": sum(q.out_of_range for q in rows),
        "values": sum(q.values for q in rows),
        "adaptations": len(moves),
        "toward_weakness_mean": round(sum(moves) / len(moves), 3) if moves else None,
        "toward_weakness_positive": sum(m > 0 for m in moves),
    }
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
