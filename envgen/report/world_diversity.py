"""How diverse the worlds are that runs trained on (docs/campaign_sfl.md, D2).

From each run's cycles' worlds (`CycleDir.environments`), measures fixed before the
campaign's runs: distinct worlds (a world is its environment and inventory settings),
each knob's coverage (the share of worlds at each value of each environment setting; per
inventory item the mean starting count and the share starting with any), and how often a
cycle's worlds change from the previous cycle's; for SFL runs what its choice did.

    python -m envgen.report.world_diversity RUN_DIR [RUN_DIR ...]   # one arm's runs, as JSON
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from envgen.envs.crafter.config import ENV_FIELDS, INVENTORY_MAX, CrafterConfig
from envgen.errors import EnvGenError
from envgen.loop.world_designers import sample_worlds
from envgen.store.run_dir import CycleDir, RunDir, read_json

World = dict[str, Any]  # a config in the authors' layout (`CrafterConfig.to_dict`)


def world_key(world: World) -> str:
    """What makes two worlds the same: their environment and inventory settings (the
    purpose line and the episode length do not count; `settings_key` on dicts)."""
    return json.dumps([world["environment_settings"], world["inventory_settings"]], sort_keys=True)


def run_cycles(run_dir: Path) -> list[list[World]]:
    """The worlds each cycle of a run trained on, cycle 1 first; an `EnvGenError` naming
    the run when it has none."""
    cycles = _cycles(run_dir)
    if not cycles:
        raise EnvGenError(f"{run_dir}: no cycle's worlds (cycles/); is it an EnvGen run?")
    return [read_json(c.environments)["configs"] for c in cycles]


def _cycles(run_dir: Path) -> list[CycleDir]:
    """The run's cycles that hold their worlds, in order."""
    return [c for c in RunDir(run_dir).cycles() if c.environments.is_file()]


def coverage(worlds: Sequence[World]) -> dict[str, Any]:
    """Per environment setting {value: share of worlds}, per inventory item {"mean": mean
    starting count, "any": share of worlds starting with at least one}."""
    n = len(worlds)
    settings = {
        field: {v: sum(w["environment_settings"][field] == v for w in worlds) / n for v in allowed}
        for field, allowed in ENV_FIELDS.items()
    }
    items = {}
    for item in INVENTORY_MAX:
        counts = np.array([w["inventory_settings"].get(item, 0) for w in worlds], float)
        items[item] = {"mean": float(counts.mean()), "any": float((counts > 0).mean())}
    return {"settings": settings, "inventory": items}


def changed(cycles: Sequence[Sequence[World]]) -> tuple[int, int]:
    """(worlds of cycles 2.. that were not among the previous cycle's worlds, worlds of
    cycles 2..) of one run."""
    new = total = 0
    for before, now in zip(cycles[:-1], cycles[1:], strict=True):
        previous = {world_key(w) for w in before}
        new += sum(world_key(w) not in previous for w in now)
        total += len(now)
    return new, total


def diversity(runs: Sequence[Sequence[Sequence[World]]]) -> dict[str, Any]:
    """D2 over one arm's runs (each a list of cycles of worlds): distinct worlds in all and
    per run, knob coverage, and the share of worlds changed between cycles, pooled over all
    the arm's (run, cycle) pairs as registered (None when no run has a second cycle)."""
    worlds = [w for run in runs for cycle in run for w in cycle]
    per_run = [len({world_key(w) for cycle in run for w in cycle}) for run in runs]
    counts = [changed(run) for run in runs]
    new, total = sum(c[0] for c in counts), sum(c[1] for c in counts)
    return {
        "runs": len(runs),
        "worlds": len(worlds),
        "distinct": len({world_key(w) for w in worlds}),
        "distinct_per_run": {
            "mean": float(np.mean(per_run)),
            "min": min(per_run),
            "max": max(per_run),
        },
        "changed_between_cycles": new / total if total else None,
        "coverage": coverage(worlds),
    }


def dr_expectation(draws: int = 10_000, seed: int = 0) -> dict[str, Any]:
    """`coverage` of `draws` worlds of domain randomization's sampler as the loop plays
    them (validated: starting items imply tools), a Monte Carlo estimate of what uniform
    sampling gives each knob (standard error at most 0.005 for 10,000 draws)."""
    drawn = [CrafterConfig.from_dict(w) for w in sample_worlds(seed, 0, 1, draws)]
    return coverage([c.to_dict() for c in drawn])


def sfl_choices(run_dir: Path) -> list[dict[str, Any]]:
    """Per cycle of an SFL run: the mean learnability of the chosen worlds and of all
    candidates, the mean rollout episodes per candidate, and the share of chosen worlds
    among the first N candidates (those domain randomization trains on at that seed and
    cycle; N = the worlds chosen)."""
    out = []
    for cycle in _cycles(run_dir):
        path = cycle.environments
        sfl = read_json(path).get("sfl")
        if sfl is None:
            raise EnvGenError(f"{path}: no SFL choice; is {run_dir} a designer: sfl run?")
        rollouts = read_json(cycle.rollouts("sfl"))
        scores, chosen = np.array(sfl["scores"]), sfl["chosen"]
        out.append(
            {
                "chosen_learnability": float(scores[chosen].mean()),
                "candidate_learnability": float(scores.mean()),
                "episodes_per_candidate": float(np.mean(rollouts["episodes"])),
                "chosen_among_dr": sum(i < len(chosen) for i in chosen) / len(chosen),
            }
        )
    return out


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args:
        print(__doc__.strip().splitlines()[-1].strip(), file=sys.stderr)
        return 2
    try:
        runs = [run_cycles(Path(a)) for a in args]
    except EnvGenError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(json.dumps({**diversity(runs), "dr_expectation": dr_expectation()}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
