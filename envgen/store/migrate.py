"""Bring runs finished before the results version into the sealed store, without retraining.

    python -m envgen.store.migrate results/runs [--notes NOTES.yaml]

A run of that time has `code_fingerprint.txt` and plain JSON-lines logs. It is current
when its fingerprint equals the one its game's code had when its results version was
declared (`VERSION_1_FINGERPRINTS`): the code that produced it is the code of version 1.
Its provenance is back-filled with what git knows (the commit that added the run's
`final_metrics.json`, and that commit's time as an upper bound on when it finished),
its `final_metrics.json` wall time, and `unknown` for the machine and software it ran
on; `--notes` adds what is known from elsewhere (e.g. a run trained under load). Then the
run is sealed. A run of other code is left alone and reported (it stays stale).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

from envgen import json_input, yaml_input
from envgen.errors import EnvGenError
from envgen.files import write_json_atomic
from envgen.input_checks import OneLineParser, existing_dir, fail, read_yaml_mapping
from envgen.store.fingerprint import FINGERPRINT_FILE
from envgen.store.manifest import is_sealed, seal_run
from envgen.store.provenance import PROVENANCE, UNKNOWN
from envgen.store.run_dir import RunDir

# {game: file fingerprint of the code when results version 1 was declared}
VERSION_1_FINGERPRINTS = {"crafter": "0b371a26310eaeb8", "heist": "8964b743cba26f84"}


def _git_added(path: Path) -> tuple[str, str]:
    """(commit, commit time) that added `path`; unknown when git cannot say."""
    try:
        out = subprocess.run(
            ["git", "log", "--diff-filter=A", "--format=%H %cI", "--", str(path)],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()
    except (OSError, subprocess.CalledProcessError):
        out = []
    return (out[-2], out[-1]) if len(out) >= 2 else (UNKNOWN, UNKNOWN)


def backfilled(run_dir: Path, game: str, fingerprint: str, note: str | None) -> dict[str, Any]:
    path = RunDir(run_dir).final_metrics
    final = json_input.read(path)
    if not isinstance(final, dict):
        raise EnvGenError(f"{path}: not a mapping of metrics")
    commit, committed_at = _git_added(path)
    data: dict[str, Any] = {
        "game": game,
        "results_version": 1,
        "code_fingerprint": fingerprint,
        "backfilled": True,
        "sessions": [
            {
                "event": UNKNOWN,
                "step": 0,
                "end_step": final.get("global_steps"),
                "wall_s": final.get("wall_s"),
                "started": UNKNOWN,
                "ended": f"before {committed_at}" if committed_at != UNKNOWN else UNKNOWN,
                "machine": UNKNOWN,
                "software": UNKNOWN,
                "threads": UNKNOWN,
                "git": {"commit": UNKNOWN, "committed_in": commit},
            }
        ],
    }
    if note:
        data["note"] = note
    return data


def _game(run_dir: Path) -> str:
    """The run's game from its config (random-policy runs have none: Crafter); an
    `EnvGenError` naming the file when it is not a config of a known game."""
    path = RunDir(run_dir).config
    if not path.is_file():
        return "crafter"
    config = yaml_input.read(path)  # bounded in size and nesting: one line, named
    game = config.get("game", "crafter") if isinstance(config, dict) else None
    if game not in VERSION_1_FINGERPRINTS:
        what = f"game {game!r}" if isinstance(config, dict) else f"a {type(config).__name__}"
        raise EnvGenError(
            f"{path}: holds {what}, not a run config of {' or '.join(VERSION_1_FINGERPRINTS)}"
        )
    return game


def _fingerprint(path: Path) -> str | None:
    """The code fingerprint recorded in `path` (16 hex digits), None without the file; an
    `EnvGenError` naming it when it is not short ASCII text (binary bytes gave a
    UnicodeDecodeError that stopped the whole migration)."""
    if not path.is_file():
        return None
    try:
        with path.open("rb") as f:
            data = f.read(1024)
        text = data.decode("ascii").strip()
    except (OSError, UnicodeDecodeError) as exc:
        why = exc.strerror if isinstance(exc, OSError) else "not ASCII text"
        raise EnvGenError(f"{path}: unreadable ({why}); not a code fingerprint") from None
    if len(data) == 1024:
        raise EnvGenError(f"{path}: over 1 KB, not a code fingerprint")
    return text


def migrate_run(run_dir: Path, note: str | None = None) -> str:
    """Migrate one run directory; returns what was done (one word). A run that already
    has a provenance keeps it: it is a real record, never replaced by a back-fill."""
    if is_sealed(run_dir):
        return "sealed-already"
    if RunDir(run_dir).provenance.exists():
        return "has-provenance"
    game = _game(run_dir)
    fingerprint = _fingerprint(run_dir / FINGERPRINT_FILE)
    if not RunDir(run_dir).final_metrics.is_file():
        return "unfinished"
    if fingerprint != VERSION_1_FINGERPRINTS[game]:
        return "stale"
    write_json_atomic(run_dir / PROVENANCE, backfilled(run_dir, game, fingerprint, note))
    (run_dir / FINGERPRINT_FILE).unlink()
    seal_run(run_dir)
    return "migrated"


LEFT_AS_IS = {
    "stale": "not of results version 1",
    "has-provenance": "has a provenance.json already, which a back-fill would overwrite",
}


def main(argv: list[str] | None = None) -> int:
    parser = OneLineParser(prog="python -m envgen.store.migrate", description=__doc__)
    parser.add_argument("runs_root", type=Path)
    parser.add_argument("--notes", type=Path, help="YAML {<hash>/seed-<K>: note}")
    args = parser.parse_args(argv)
    try:
        existing_dir(args.runs_root, "runs to migrate (results/runs)")
        notes = (
            read_yaml_mapping(args.notes, "notes: {<hash>/seed-<K>: note}") if args.notes else {}
        )
    except EnvGenError as exc:
        return fail(parser.prog, exc)
    counts: dict[str, int] = {}
    for run_dir in (run.root for run in RunDir.under(args.runs_root)):
        key = run_dir.relative_to(args.runs_root).as_posix()
        try:
            outcome = migrate_run(run_dir, notes.get(key))
        except EnvGenError as exc:
            print(f"{exc} (left as is)", file=sys.stderr)
            outcome = "damaged"
        counts[outcome] = counts.get(outcome, 0) + 1
        if outcome in LEFT_AS_IS:
            print(f"{run_dir}: {LEFT_AS_IS[outcome]} (left as is)", file=sys.stderr)
    print(", ".join(f"{n} {k}" for k, n in sorted(counts.items())) or "no run directories")
    return 1 if counts.get("damaged") else 0


if __name__ == "__main__":
    sys.exit(main())
