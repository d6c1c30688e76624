"""The `envgen` command: each subpackage registers its own subcommands.

A subcommand module exposes ``register(subparsers)``; it adds its parser and sets
``func`` to a callable taking the parsed namespace and returning an exit code. Only the
module of the command given is imported: `envgen campaign status` or `envgen verify`
loads no torch or scipy (under a second where importing every module took several),
and a missing optional extra breaks only the command that needs it. The others are
listed by their one-line help below, so `envgen --help` imports none.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from envgen.errors import EnvGenError
from envgen.input_checks import OneLineParser, fail

# Explicit registry, in --help order: command -> (module that registers it, --help line).
SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "envs": ("envgen.envs.cli", "inspect Crafter-EnvGen environments"),
    "bench": ("envgen.bench", "speed benchmarks against the reference"),
    "train": ("envgen.agents.cli", "train PPO (or AD) in stock Crafter"),
    "llm": ("envgen.llm.cli", "the LLM environment designer: local server, recording, cache"),
    "run": ("envgen.loop.cli", "one EnvGen or baseline run (resumable)"),
    "campaign": ("envgen.pipeline.campaign", "start, watch and collect a long campaign (e.g. cpu)"),
    "verify": ("envgen.verify", "re-derive every committed table and claim from the raw run logs"),
    "rerun": (
        "envgen.rerun",
        "retrain a committed run's first steps here and compare them with its logs",
    ),
    "gpu": ("envgen.gpu", "drive an offline GPU machine: check, bench, run in chunks, import"),
}


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The parser for `argv` (default: sys.argv): the command it names is registered by
    its module, every other one only listed; no command given: all listed, none loaded."""
    parser = OneLineParser(
        prog="envgen",
        description=(
            "EnvGen replication. Environments (envs), benchmarks (bench), PPO training "
            "(train), the LLM environment designer (llm), full EnvGen runs (run), long "
            "campaigns (campaign), re-deriving the committed numbers (verify), retraining a "
            "committed run's first steps to compare them (rerun) and an offline GPU "
            "machine (gpu)."
        ),
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    words = sys.argv[1:] if argv is None else argv
    given = next((word for word in words if not word.startswith("-")), None)
    for name, (module_name, help_text) in SUBCOMMANDS.items():
        if name == given:
            importlib.import_module(module_name).register(sub)
        else:
            sub.add_parser(name, help=help_text)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser(argv)
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except EnvGenError as exc:  # a user's mistake: one line, no traceback
        command = " ".join(
            str(getattr(args, name)) for name in _COMMAND_NAMES if getattr(args, name, None)
        )
        return fail(f"envgen {command}", exc)


# Namespace attributes that hold the (sub)command names, outermost first.
_COMMAND_NAMES = (
    "command",
    "target",
    "envs_command",
    "llm_command",
    "campaign_command",
    "gpu_command",
)


if __name__ == "__main__":
    sys.exit(main())
