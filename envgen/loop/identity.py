"""A run's identity, the part that needs configs: its config hashes to its folder's name.

The rest of the check is the store's (`envgen.store.identity`); `check_identity` runs
wherever a run is read as a result or brought in.
"""

from __future__ import annotations

from pathlib import Path

from envgen.errors import ConfigError
from envgen.loop.config import RunConfig
from envgen.store.identity import check_folder
from envgen.store.run_dir import FIX, NOT_CONFIG, RunDir, RunIdentityError
from envgen.yaml_input import YAMLInputError


def check_identity(run_dir: Path) -> None:
    """Raise `RunIdentityError` (one line naming the folder and the file that disagrees)
    unless `run_dir` is the run its files describe (`envgen.store.identity`)."""
    check_folder(run_dir, _config)


def _config(run: RunDir) -> RunConfig:
    """The run's config (`RunDir.config`), checked against the folder's hash and seed."""
    path = run.config
    if path.is_dir():
        raise RunIdentityError(f"{path}: a directory, not a run config; {FIX}")
    try:
        data = run.read_config()
    except YAMLInputError as exc:
        raise RunIdentityError(f"{exc}; {FIX}") from None
    try:
        config = RunConfig.from_dict({k: v for k, v in data.items() if k not in NOT_CONFIG})
    except ConfigError as exc:
        raise RunIdentityError(f"{path}: not a run config of this code ({exc})") from None
    for what, value, wanted in (
        ("its config hashes to", config.config_hash(), run.config_hash),
        ("its recorded config_hash is", data.get("config_hash"), run.config_hash),
        ("its seed is", data.get("seed"), run.seed),
    ):
        if value != wanted or isinstance(value, bool):
            raise RunIdentityError(
                f"{path}: {what} {value!r}, but the run lies in {run.config_hash}/"
                f"seed-{run.seed}: the folder holds another run; {FIX}"
            )
    return config
