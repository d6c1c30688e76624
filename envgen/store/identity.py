"""A run's identity: its folder (`<config-hash>/seed-<K>`, where a table looks it up) names
the run its files describe: its config (checked by `envgen.loop.identity`, which knows
configs), its final metrics (hash, seed, method, game) and its provenance (game). A
random-policy run (`random-<N>ep/seed-<K>`) has no config; its final metrics say method
"random", seed K and N episodes.

Why: a manifest vouches for a run's bytes, not for where it lies; a run copied into
another run's folder passes every manifest check and counts in both arms of a
comparison. Symbolic links are refused for the same reason.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from envgen import json_input
from envgen.store.manifest import read_run_bytes
from envgen.store.provenance import read_provenance
from envgen.store.run_dir import FIX, RunDir, RunIdentityError


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
    for path in sorted(run_dir.rglob("*")):  # rglob does not descend into a linked folder
        if path.is_symlink():
            raise RunIdentityError(
                f"{path}: a symbolic link inside a run folder; a run holds its own files"
            )


def check_folder(run_dir: Path, config_of: Callable[[RunDir], Any]) -> None:
    """Raise `RunIdentityError` (one line naming the folder and the file that disagrees)
    unless `run_dir` is the run its files describe (module docstring); `config_of`: the
    run's config (with `method` and `game`) from its run.yaml, checked against the
    folder's hash and seed."""
    run = RunDir(Path(run_dir))
    refuse_links(run.root)
    seed, folder = run.seed, run.config_hash
    if seed is None:
        raise RunIdentityError(f"{run.root}: not a run folder (seed-<K> under its config hash)")
    final = read_mapping(run.final_metrics)
    if run.config.exists():
        config = config_of(run)
        expected = {"config_hash": folder, "seed": seed, "method": config.method}
        if "game" in final:
            expected["game"] = config.game
        game = config.game
    else:
        episodes = run.random_episodes
        if episodes is None:
            raise RunIdentityError(
                f"{run.root}: no {run.config.name}, and {folder!r} is not a random-policy "
                f"run's folder (random-<N>ep); {FIX}"
            )
        expected = {"config_hash": None, "seed": seed, "method": "random", "episodes": episodes}
        game = "crafter"
    for key, value in expected.items():
        if final.get(key) != value or type(final.get(key)) is not type(value):
            raise RunIdentityError(
                f"{run.final_metrics}: {key} is {final.get(key)!r}, but the run's "
                f"folder and config give {value!r}: it belongs to another run; {FIX}"
            )
    provenance = read_provenance(run.root)
    if provenance is not None and provenance.get("game", game) != game:
        raise RunIdentityError(
            f"{run.provenance}: game is {provenance.get('game')!r}, the run's "
            f"config says {game!r}: it belongs to another run; {FIX}"
        )


def read_mapping(path: Path) -> dict[str, Any]:
    """The JSON mapping in a run file, checked against its manifest when sealed (which
    vouches only for bytes); a `RunIdentityError` line naming it otherwise."""
    try:
        data = json_input.loads(read_run_bytes(path), path)
    except json_input.JSONInputError as exc:
        raise RunIdentityError(f"{exc}; {FIX}") from None
    if not isinstance(data, dict):
        raise RunIdentityError(f"{path}: holds a {type(data).__name__}, not a mapping; {FIX}")
    return data
