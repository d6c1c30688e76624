"""DVC stage `check_params`: validate params.yaml before any stage that owns results runs.

    python -m envgen.pipeline.params_stage params.yaml --out results/params.json \
        --tables replication/table1.yaml ...

DVC removes a stage's outputs before running its command, so a train stage that found
`step_scale: tiny` itself would fail only after its committed runs.json, metrics.json
and scores.json were gone (`cache: false`: only git brings them back). Every train
stage depends on this stage's output, so `dvc repro` runs it first and stops here, one
line on stderr, with nothing removed (the output is `persist: true` and written only
when every profile and the execution settings are valid). It checks, too, what a train
stage would refuse before training: each replication file given with --tables, planned
under the chosen profile, and a GPU profile on a machine without a GPU. The output is
the chosen profile and execution settings as resolved, for the record.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from envgen.errors import ConfigError
from envgen.files import write_json_atomic
from envgen.input_checks import OneLineParser
from envgen.pipeline.train import (
    check_device,
    check_params,
    executor_config,
    read_params,
    table_plan,
)


def resolved_params(path: Path, tables: Sequence[Path] = ()) -> dict[str, Any]:
    """The chosen profile and execution settings of params.yaml at `path`, every profile
    validated, then `tables` planned and the device checked (module docstring); a mistake
    is a `ConfigError` naming the file and field."""
    try:
        params = read_params(path)
        profile = check_params(params)
        executor = executor_config(params)
        check_device(profile, executor)
    except ConfigError as exc:
        raise exc.in_file(path) from None
    for table in tables:
        table_plan(table, profile)
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
