"""`envgen run CONFIG --profile NAME --seed K`: one run at a profile's scale, no Python.

The config is read in paper units, as a replication file's `run:` row is, and scaled
exactly as the pipeline plans that row (`Profile.apply(config, initial_set, own)`, `own`
the fields the file sets): the run `python -m envgen.pipeline.train` trains for such a
row, under the same config hash and run directory. The initial set is the file's
`initial_set` where it sets one, else the profile's first (the one runs.json names).
Here, not in `envgen.loop.cli`, because profiles are the pipeline's and `loop` sits below
`pipeline` (tests/test_import_layers.py): this module adds the two options to `envgen
run` as `envgen.loop.cli.register` builds it. The device and torch threads stay the
command's own options, as the pipeline gives them to a run apart from its config.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from envgen.errors import ConfigError
from envgen.input_checks import read_yaml_mapping
from envgen.loop import cli as loop_cli
from envgen.loop.config import RunConfig
from envgen.pipeline.params_stage import load_settings
from envgen.pipeline.profile import Profile

PARAMS = Path(__file__).resolve().parents[2] / "params.yaml"
"""The repository's params.yaml, wherever the command is started."""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = loop_cli.register(subparsers)
    parser.add_argument(
        "--profile",
        help="scale CONFIG (paper units) by this profile of --params, as the pipeline plans "
        "a row: step counts, network, PPO overrides, evaluation size and the profile's LLM "
        'and world settings where CONFIG sets none (docs/pipeline.md, "Profiles")',
    )
    parser.add_argument(
        "--params",
        type=Path,
        help="the params.yaml holding --profile (default: the repository's); read only "
        "with --profile",
    )
    parser.set_defaults(func=main)


def profiled(profile: Profile) -> loop_cli.ConfigAdjust:
    """The change `profile` makes to a config read from its file (module docstring)."""

    def adjust(config: RunConfig, path: Path) -> RunConfig:
        own = frozenset(read_yaml_mapping(path, "a run config"))
        budget = profile.for_game(config.game)
        initial_set = config.initial_set if "initial_set" in own else budget.initial_sets[0]
        return profile.apply(config, initial_set, own)

    return adjust


def main(args: argparse.Namespace) -> int:
    if args.params is not None and args.profile is None:
        raise ConfigError("--params", "is read only with --profile: give --profile NAME too")
    args.params = args.params or PARAMS
    if args.profile is not None:
        profile, _ = load_settings(args.params, args.profile)
        args.adjust_config = profiled(profile)
        args.adjust_words = f" --profile {args.profile} --params {args.params}"
    return loop_cli.main(args)
