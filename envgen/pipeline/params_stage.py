"""params.yaml read and checked, for the train stages and as DVC stage `check_params`.

    python -m envgen.pipeline.params_stage params.yaml --out results/params.json \
        --tables replication/table1.yaml ...

`load_settings` gives a train stage (and a campaign, `envgen gpu run`) its profile and
executor with every profile checked first: a typo in `paper` is found while `smoke`
runs, before anyone spends a GPU-day on it. As a stage it runs before every train stage
(they depend on its output): DVC removes a stage's outputs before running its command,
so a train stage that found `step_scale: tiny` itself would fail only after its
committed runs.json, metrics.json and scores.json were gone (`cache: false`: only git
brings them back). This stage stops `dvc repro` first, one line on stderr, nothing
removed (its output is `persist: true`, written only when all is valid). It also checks
what a train stage would refuse before training: each replication file of --tables
planned under the chosen profile, and a GPU profile on a machine without a GPU. The
output is the chosen profile and execution settings as resolved, for the record.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from envgen.errors import ConfigError
from envgen.files import write_json_atomic
from envgen.input_checks import OneLineParser, at_most, check_fields, read_yaml_mapping, unknown_key
from envgen.pipeline.executor import ExecutorConfig
from envgen.pipeline.plan import plan_file
from envgen.pipeline.profile import Profile, load_profile

# The top-level keys of params.yaml.
PARAMS_KEYS = ("profile", "profiles", "executor", "execution")
MAX_RUNS_PER_ROW = 1_000
"""Most runs (seeds x initial sets) one row of a profile may ask for: the paper trains 30,
the largest campaign here 16; planning 200,000 took the stage past 120 s."""


def read_params(path: Path) -> dict[str, Any]:
    """params.yaml as a mapping; a missing, empty or malformed file is a `ConfigError`."""
    return read_yaml_mapping(path, "the pipeline parameters (profile, profiles, execution)")


def executor_config(params: dict[str, Any]) -> ExecutorConfig:
    """`executor` and `execution` of params.yaml, unknown keys and wrong types rejected by
    name."""
    execution = params.get("execution") or {}
    if not isinstance(execution, dict):
        raise ConfigError("execution", "must be a mapping of setting: value")
    check_fields(ExecutorConfig, execution, "execution.", skip="kind")
    for name, limit, why in (
        ("workers", 4096, "runs at once"),
        ("env_workers", 1024, "processes per run"),
        ("gpus_per_run", 64, "GPUs per run"),
        ("retries", 100, "attempts of a failed run"),
    ):
        if name in execution:
            at_most(execution[name], limit, f"execution.{name}", why)
    kind = params.get("executor", "local")
    if not isinstance(kind, str):
        raise ConfigError("executor", f"{kind!r} is not a string; use local or ray")
    return ExecutorConfig(kind=kind, **execution)


def check_params(params: dict[str, Any]) -> Profile:
    """Every profile (module docstring) and the execution settings of params.yaml;
    returns the chosen profile. An unknown top-level key (`profle: paper`) is refused
    with the nearest known name: ignored, it would train another profile than meant."""
    unknown = sorted(set(params) - set(PARAMS_KEYS), key=str)
    if unknown:
        raise unknown_key(str(unknown[0]), unknown[0], PARAMS_KEYS)
    profiles = params.get("profiles") or {}
    if isinstance(profiles, dict):
        for name in profiles:
            check_runs_per_row(load_profile(params, str(name)))
    executor_config(params)
    return load_profile(params)


def check_runs_per_row(profile: Profile) -> None:
    """At most `MAX_RUNS_PER_ROW` runs (seeds x initial sets) per row, for each game the
    profile budgets: one line says what to lower, before the planning takes minutes."""
    for game in (profile.game, *(g for g, _ in profile.games)):
        budget = profile.for_game(game)
        runs = len(budget.seeds) * len(budget.initial_sets)
        if runs > MAX_RUNS_PER_ROW:
            where = budget.where
            raise ConfigError(
                f"{where}.seeds",
                f"{len(budget.seeds):,} seeds x {len(budget.initial_sets):,} initial sets are "
                f"{runs:,} runs per row, more than {MAX_RUNS_PER_ROW:,} (the paper trains 10 x "
                "3); give fewer seeds",
            )


def load_settings(path: Path, profile: str | None) -> tuple[Profile, ExecutorConfig]:
    """The chosen profile and the executor of params.yaml at `path`, every profile checked
    first; a mistake names the file."""
    try:
        params = read_params(path)
        check_params(params)
        return load_profile(params, profile), executor_config(params)
    except ConfigError as exc:
        raise exc.in_file(path) from None


def check_device(profile: Profile, executor: ExecutorConfig) -> None:
    """Fail before any run starts when a GPU profile would train on this machine (local
    workers or a local Ray instance) and it has no GPU; a cluster's workers may have one."""
    on_cluster = executor.kind == "ray" and executor.ray_address is not None
    if on_cluster or not profile.device.startswith("cuda"):
        return
    import torch  # lazy: torch; `envgen campaign status` loads this module and no torch

    if not torch.cuda.is_available():
        raise ConfigError(
            f"profiles.{profile.name}.device",
            f"{profile.device!r}, but torch finds no GPU on this machine, where the runs "
            "would train. Run it on a GPU machine; or send the runs to a cluster with "
            "`-S executor=ray -S execution.ray_address=auto`; or train on CPU (slow) with "
            f'`-S profiles.{profile.name}.device=cpu` (docs/pipeline.md, "Paper scale").',
        )


def resolved_params(path: Path, tables: Sequence[Path] = ()) -> dict[str, Any]:
    """`load_settings`, then `tables` planned and the device checked (module docstring):
    the chosen profile and execution settings as a mapping."""
    profile, executor = load_settings(path, None)
    try:
        check_device(profile, executor)
    except ConfigError as exc:
        raise exc.in_file(path) from None
    for table in tables:
        plan_file(table, profile)
    return {"profile": dataclasses.asdict(profile), "execution": dataclasses.asdict(executor)}


def main(argv: Sequence[str] | None = None) -> int:
    parser = OneLineParser(
        prog="python -m envgen.pipeline.params_stage", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("params", type=Path, help="params.yaml")
    parser.add_argument("--out", type=Path, help="write the resolved settings here (JSON)")
    parser.add_argument(
        "--tables",
        type=Path,
        nargs="*",
        default=[],
        help="replication files the train stages will plan under the chosen profile",
    )
    args = parser.parse_args(argv)
    try:
        resolved = resolved_params(args.params, args.tables)
    except ConfigError as exc:
        print(f"{parser.prog}: {exc}", file=sys.stderr)
        return 1
    if args.out:
        write_json_atomic(args.out, resolved)
    tables = f", {len(args.tables)} replication file(s)" if args.tables else ""
    print(
        f"{args.params}: profile {resolved['profile']['name']!r}, execution settings{tables} valid"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
