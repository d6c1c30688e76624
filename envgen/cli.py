"""The `envgen` command: each subpackage registers its own subcommands.

A subcommand module exposes ``register(subparsers)``, which adds its parser and sets
``func`` (parsed namespace -> exit code). Only the module of the command given is
imported, the others are listed by their help line: `envgen --help` answers in well
under a second, and a dependency missing for one command breaks only that command.
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
    "bench": ("envgen.bench.cli", "speed benchmarks against the reference"),
    "train": ("envgen.agents.cli", "train PPO (or AD) in stock Crafter"),
    "llm": ("envgen.llm.cli", "the LLM environment designer: local server, recording, cache"),
    "run": ("envgen.pipeline.run_cli", "one EnvGen or baseline run (resumable)"),
    "campaign": ("envgen.campaign.cli", "start, watch and collect a long campaign (e.g. cpu)"),
    "verify": (
        "envgen.evidence.verify",
        "re-derive every committed table and claim from the raw run logs",
    ),
    "rerun": (
        "envgen.evidence.rerun_check",
        "retrain a committed run's first steps here and compare them with its logs",
    ),
    "gpu": ("envgen.gpu.cli", "drive an offline GPU machine: check, bench, run in chunks, import"),
}


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The parser for `argv` (default: sys.argv): the command it names is registered by
    its module, every other one only listed; no command given: all listed, none loaded."""
    parser = OneLineParser(
        prog="envgen", description="EnvGen replication: LLM-designed training environments."
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    given = next(iter(sys.argv[1:] if argv is None else argv), None)  # "-h" first: none loads
    for name, (module_name, help_text) in SUBCOMMANDS.items():
        if name != given:
            sub.add_parser(name, help=help_text)
            continue
        try:
            module = importlib.import_module(module_name)
        except ImportError as exc:
            if (exc.name or "envgen").split(".")[0] == "envgen":
                raise  # our own code: a bug, with its traceback
            raise SystemExit(
                fail(f"envgen {name}", EnvGenError(f"{exc}; install the project: make setup"))
            ) from None
        module.register(sub)
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
    "probe_command",
)


if __name__ == "__main__":
    sys.exit(main())
