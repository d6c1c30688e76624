"""`envgen bench TARGET`: speed against the reference, measured in the same run.

Each target module exposes ``add_arguments(parser)`` and ``run(args) -> int`` and
prints a JSON object as its last line (``ours_sps``, ``stock_sps``/reference, ``ratio``).
`rank` is a measurement, not a speed race: how well two validation seeds agree on a
curriculum's ranking at each budget (its JSON holds ``per_budget``).
"""

from __future__ import annotations

import argparse
import importlib

# Explicit registry: bench target -> module implementing it.
TARGETS: dict[str, tuple[str, str]] = {
    "env": ("envgen.bench.env", "Crafter-EnvGen env steps/s vs stock crafter.Env"),
    "train": ("envgen.bench.train", "PPO/AD trainer steps/s vs the reference setup"),
    "heist": ("envgen.bench.heist", "Heist-EnvGen steps/s vs plain procgen Heist"),
    "precision": (
        "envgen.bench.precision",
        "learning equivalence: the same seeds as one cohort per precision mode (GPU)",
    ),
    "isa": ("envgen.bench.isa", "PPO update speed: torch's CPU path vs pinned to AVX2"),
    "rank": (
        "envgen.bench.rank",
        "curriculum validation agents: do two seeds rank 16 environments alike, per budget",
    ),
}


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "bench", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    targets = parser.add_subparsers(dest="target", metavar="TARGET", required=True)
    for name, (module_name, help_text) in TARGETS.items():
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name and (module_name + ".").startswith(exc.name + "."):
                continue  # not built yet
            raise
        sub = targets.add_parser(name, help=help_text, description=module.__doc__)
        module.add_arguments(sub)
        sub.set_defaults(func=module.run)
