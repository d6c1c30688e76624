"""A run's identity: its folder names the run its own files describe.

`<runs_root>/<config-hash>/seed-<K>/` is where a table looks a run up, so the folder's
name is the run's identity, and a run's files must agree with it: run.yaml's config
hashes to the folder's hash and holds seed K, final_metrics.json names the same hash,
seed and method (and game), provenance.json the same game. A random-policy run
(`random-<N>ep/seed-<K>`) has no run.yaml; its final metrics say method "random", seed
K and N episodes.

Why: a manifest vouches for a run's bytes, not for where the run lies. A run copied or
imported into another run's folder (the domain-randomization seed-19 run in the
Crafter-only seed-19 folder) passes every manifest check and counts in both arms of a
comparison. Symbolic links are refused for the same reason: a linked folder or file
makes one run appear in two places, or a file outside the store appear inside it.
`check_identity` is called wherever a run is read as a result or brought in: the
pipeline's jobs and runs.json entries (tables, campaign collect), `envgen gpu import`,
`envgen verify` and `envgen rerun`.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from envgen import json_input, yaml_input
from envgen.errors import ConfigError
from envgen.loop.config import RunConfig
from envgen.store.manifest import RunStoreError, read_run_bytes
from envgen.store.provenance import read_provenance
from envgen.yaml_input import YAMLInputError

SEED_DIR = re.compile(r"seed-(0|[1-9][0-9]{0,8})")
RANDOM_DIR = re.compile(r"random-([1-9][0-9]{0,8})ep")
RUN_YAML = "run.yaml"
NOT_CONFIG = ("seed", "config_hash")  # run.yaml's record of the run, not config fields
FIX = "restore it from git (git checkout -- PATH) or remove it and train it again"


class RunIdentityError(RunStoreError):
    """A run folder whose name, files or links disagree with the run they hold."""


def refuse_links(run_dir: Path) -> None:
    """A `RunIdentityError` when the run folder, its hash folder or anything inside it is
    a symbolic link."""
    run_dir = Path(run_dir)
    for path in (run_dir.parent, run_dir):
        if path.is_symlink():
            raise RunIdentityError(
                f"{path}: a symbolic link, not a run folder (a run must lie where its name "
                f"says, once); replace it with the run itself"
            )
    for root, dirs, files in os.walk(run_dir):
        for name in sorted(dirs + files):
            path = Path(root, name)
            if path.is_symlink():
                raise RunIdentityError(
                    f"{path}: a symbolic link inside a run folder; a run holds its own files"
                )


def check_identity(run_dir: Path) -> None:
    """Raise `RunIdentityError` (one line naming the folder and the file that disagrees)
    unless `run_dir` is the run its files describe (module docstring)."""
    run_dir = Path(run_dir)
    refuse_links(run_dir)
    seed_match = SEED_DIR.fullmatch(run_dir.name)
    if seed_match is None:
        raise RunIdentityError(f"{run_dir}: not a run folder (seed-<K> under its config hash)")
    seed, folder = int(seed_match[1]), run_dir.parent.name
    final = _mapping(run_dir / "final_metrics.json")
    if (run_dir / RUN_YAML).exists():
        config = _config(run_dir, folder, seed)
        expected = {"config_hash": folder, "seed": seed, "method": config.method}
        if "game" in final:
            expected["game"] = config.game
        game = config.game
    else:
        episodes = RANDOM_DIR.fullmatch(folder)
        if episodes is None:
            raise RunIdentityError(
                f"{run_dir}: no {RUN_YAML}, and {folder!r} is not a random-policy run's "
                f"folder (random-<N>ep); {FIX}"
            )
        expected = {"config_hash": None, "seed": seed, "method": "random"}
        expected["episodes"] = int(episodes[1])
        game = "crafter"
    for key, value in expected.items():
        if final.get(key) != value or type(final.get(key)) is not type(value):
            raise RunIdentityError(
                f"{run_dir}/final_metrics.json: {key} is {final.get(key)!r}, but the run's "
                f"folder and config give {value!r}: it belongs to another run; {FIX}"
            )
    provenance = read_provenance(run_dir)
    if provenance is not None and provenance.get("game", game) != game:
        raise RunIdentityError(
            f"{run_dir}/provenance.json: game is {provenance.get('game')!r}, the run's "
            f"config says {game!r}: it belongs to another run; {FIX}"
        )


def _config(run_dir: Path, folder: str, seed: int) -> Any:
    """run.yaml's config, checked against the folder's hash and seed."""
    path = run_dir / RUN_YAML
    if path.is_dir():
        raise RunIdentityError(f"{path}: a directory, not a run config; {FIX}")
    try:
        data = yaml_input.loads(read_run_bytes(path), path)
    except YAMLInputError as exc:
        raise RunIdentityError(f"{exc}; {FIX}") from None
    if not isinstance(data, dict):
        raise RunIdentityError(f"{path}: holds a {type(data).__name__}, not a run config; {FIX}")
    try:
        config = RunConfig.from_dict({k: v for k, v in data.items() if k not in NOT_CONFIG})
    except ConfigError as exc:
        raise RunIdentityError(f"{path}: not a run config of this code ({exc})") from None
    actual = config.config_hash()
    for what, value, wanted in (
        ("its config hashes to", actual, folder),
        ("its recorded config_hash is", data.get("config_hash"), folder),
        ("its seed is", data.get("seed"), seed),
    ):
        if value != wanted or isinstance(value, bool):
            raise RunIdentityError(
                f"{path}: {what} {value!r}, but the run lies in {run_dir.parent.name}/"
                f"seed-{seed}: the folder holds another run; {FIX}"
            )
    return config


def _mapping(path: Path) -> dict[str, Any]:
    try:
        data = json_input.loads(read_run_bytes(path), path)
    except json_input.JSONInputError as exc:
        raise RunIdentityError(str(exc)) from None
    if not isinstance(data, dict):
        raise RunIdentityError(f"{path}: holds a {type(data).__name__}, not a mapping; {FIX}")
    return data
