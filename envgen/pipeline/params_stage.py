"""DVC stage `check_params`: validate params.yaml before any stage that owns results runs.

    python -m envgen.pipeline.params_stage params.yaml --out results/params.json

DVC removes a stage's outputs before running its command, so a train stage that found
`step_scale: tiny` itself would fail only after its committed runs.json, metrics.json
and scores.json were gone (`cache: false`: only git brings them back). Every train
stage depends on this stage's output, so `dvc repro` runs it first and stops here, one
line on stderr, with nothing removed (the output is `persist: true` and written only
when every profile and the execution settings are valid). The output is the chosen
profile and execution settings as resolved, for the record.
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
from envgen.pipeline.train import check_params, executor_config, read_params


def resolved_params(path: Path) -> dict[str, Any]:
    """The chosen profile and execution settings of params.yaml at `path`, every profile
    validated; a mistake is a `ConfigError` naming the file and field."""
    try:
        params = read_params(path)
        profile = check_params(params)
        executor = executor_config(params)
    except ConfigError as exc:
        raise exc.in_file(path) from None
    return {"profile": dataclasses.asdict(profile), "execution": dataclasses.asdict(executor)}


def main(argv: Sequence[str] | None = None) -> int:
    parser = OneLineParser(
        prog="python -m envgen.pipeline.params_stage", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("params", type=Path, help="params.yaml")
    parser.add_argument("--out", type=Path, help="write the resolved settings here (JSON)")
    args = parser.parse_args(argv)
    try:
        resolved = resolved_params(args.params)
    except ConfigError as exc:
        print(f"{parser.prog}: {exc}", file=sys.stderr)
        return 1
    if args.out:
        write_json_atomic(args.out, resolved)
    print(f"{args.params}: profile {resolved['profile']['name']!r} and execution settings valid")
    return 0


if __name__ == "__main__":
    sys.exit(main())
