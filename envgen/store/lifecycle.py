"""A run's life in the store: each training session is recorded, the finished run sealed.

    start_session(run_dir, game, step)   # after resume: step 0 starts, step > 0 resumes
    ... training ...                     # final_metrics.json written
    finish_run(run_dir, step)            # session closed, logs gzipped, manifest last

A kill between `final_metrics.json` and the manifest leaves an unsealed run that
`finish_run` completes on the next attempt without training (`envgen.loop.runner`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from envgen.store.fingerprint import code_fingerprint
from envgen.store.manifest import is_sealed, seal_run
from envgen.store.provenance import begin_session, end_session, read_provenance


def start_session(
    run_dir: Path,
    game: str,
    step: int,
    device: str = "cpu",
    env_workers: int | None = None,
    cohort: dict[str, Any] | None = None,
    key: str | None = None,
) -> None:
    """Record a session of `game` training in `run_dir` from global step `step`; `cohort`:
    the run's cohort ({"size", "slot", "seeds"}) when it trains in one; `key`: its
    results-version key (`envgen.results_version.version_key`; default the game)."""
    begin_session(
        run_dir,
        game,
        step,
        device,
        env_workers,
        fingerprint=code_fingerprint(game),
        cohort=cohort,
        key=key,
    )


def finish_run(run_dir: Path, step: int) -> None:
    """Close the open session (if any) at `step`, then seal the run (idempotent)."""
    if is_sealed(run_dir):
        return
    data = read_provenance(run_dir)
    if data and data.get("sessions") and "ended" not in data["sessions"][-1]:
        end_session(run_dir, step)
    seal_run(run_dir)
