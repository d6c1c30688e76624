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

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from envgen.files import write_json_atomic
from envgen.store.fingerprint import FINGERPRINT_FILE
from envgen.store.manifest import is_sealed, seal_run
from envgen.store.provenance import PROVENANCE, UNKNOWN

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
    final = json.loads((run_dir / "final_metrics.json").read_text(encoding="utf-8"))
    commit, committed_at = _git_added(run_dir / "final_metrics.json")
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


def migrate_run(run_dir: Path, note: str | None = None) -> str:
    """Migrate one run directory; returns what was done (one word)."""
    if is_sealed(run_dir):
        return "sealed-already"
    config_path = run_dir / "run.yaml"  # random-policy runs have none: they play Crafter
    config = (
        yaml.safe_load(config_path.read_text(encoding="utf-8")) if config_path.is_file() else {}
    )
    game = (config or {}).get("game", "crafter")
    fp_path = run_dir / FINGERPRINT_FILE
    fingerprint = fp_path.read_text(encoding="utf-8").strip() if fp_path.is_file() else None
    if not (run_dir / "final_metrics.json").is_file():
        return "unfinished"
    if fingerprint != VERSION_1_FINGERPRINTS[game]:
        return "stale"
    write_json_atomic(run_dir / PROVENANCE, backfilled(run_dir, game, fingerprint, note))
    fp_path.unlink()
    seal_run(run_dir)
    return "migrated"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m envgen.store.migrate", description=__doc__)
    parser.add_argument("runs_root", type=Path)
    parser.add_argument("--notes", type=Path, help="YAML {<hash>/seed-<K>: note}")
    args = parser.parse_args(argv)
    notes = yaml.safe_load(args.notes.read_text(encoding="utf-8")) if args.notes else {}
    counts: dict[str, int] = {}
    for run_dir in sorted(p for p in args.runs_root.glob("*/seed-*") if p.is_dir()):
        key = run_dir.relative_to(args.runs_root).as_posix()
        outcome = migrate_run(run_dir, (notes or {}).get(key))
        counts[outcome] = counts.get(outcome, 0) + 1
        if outcome == "stale":
            print(f"{run_dir}: not of results version 1 (left as is)", file=sys.stderr)
    print(", ".join(f"{n} {k}" for k, n in sorted(counts.items())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
