"""`envgen bench TARGET`: speed against the reference, measured in the same run.

Each target module exposes ``add_arguments(parser)`` and ``run(args) -> int`` and
prints a JSON object as its last line (``ours_sps``, ``stock_sps``/reference, ``ratio``).
`rank` is a measurement, not a speed race: how well two validation seeds agree on a
curriculum's ranking at each budget (its JSON holds ``per_budget``).
"""

from __future__ import annotations

import argparse
from types import ModuleType

from envgen.bench import env, heist, numerics, precision, rank, train

# Explicit registry: bench target -> (module implementing it, --help line). Every target
# is imported: `envgen bench --help` shows each one's own arguments.
TARGETS: dict[str, tuple[ModuleType, str]] = {
    "env": (env, "Crafter-EnvGen env steps/s vs stock crafter.Env"),
    "train": (train, "PPO/AD trainer steps/s vs the reference setup"),
    "heist": (heist, "Heist-EnvGen steps/s vs plain procgen Heist"),
    "precision": (
        precision,
        "learning equivalence: the same seeds as one cohort per precision mode (GPU)",
    ),
    "numerics": (numerics, "PPO steps/s in portable CPU numerics vs native, same machine"),
    "rank": (
        rank,
        "curriculum validation agents: do two seeds rank 16 environments alike, per budget",
    ),
}


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "bench", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    targets = parser.add_subparsers(dest="target", metavar="TARGET", required=True)
    for name, (module, help_text) in TARGETS.items():
        sub = targets.add_parser(name, help=help_text, description=module.__doc__)
        module.add_arguments(sub)
        sub.set_defaults(func=module.run)
