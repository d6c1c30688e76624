"""The `envgen` command: each subpackage registers its own subcommands.

A subcommand module exposes ``register(subparsers)``; it adds its parser and sets
``func`` to a callable taking the parsed namespace and returning an exit code.
Modules are imported lazily by name so that `envgen --help` stays fast and a
missing optional extra only breaks the subcommand that needs it.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from envgen.errors import EnvGenError
from envgen.input_checks import OneLineParser, fail

# Explicit registry of the modules that register subcommands, in --help order.
SUBCOMMAND_MODULES: tuple[str, ...] = (
    "envgen.envs.cli",  # envs preview
    "envgen.bench",  # bench env | train | heist | isa | rank
    "envgen.agents.cli",  # train
    "envgen.llm.cli",  # llm serve | record | ...
    "envgen.loop.cli",  # run
    "envgen.pipeline.campaign",  # campaign start | status | collect | stop
    "envgen.verify",  # verify: re-derive every committed number
    "envgen.rerun",  # rerun: retrain a committed run's first steps, compare its logs
    "envgen.gpu",  # gpu check | bench | run | import
)


def build_parser() -> argparse.ArgumentParser:
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
    for module_name in SUBCOMMAND_MODULES:
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name and (module_name + ".").startswith(exc.name + "."):
                continue  # that part of the package is not built yet
            raise
        module.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
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
