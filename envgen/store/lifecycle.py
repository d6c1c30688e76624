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

from envgen import numerics
from envgen.errors import EnvGenError
from envgen.files import write_json_atomic
from envgen.results_version import RESULTS_VERSION
from envgen.store import provenance
from envgen.store.manifest import is_sealed, seal_run
from envgen.store.provenance import PROVENANCE, load_average, now_utc, read_provenance


def start_session(
    run_dir: Path,
    game: str,
    step: int,
    device: str = "cpu",
    env_workers: int | None = None,
    cohort: dict[str, Any] | None = None,
    key: str | None = None,
    fingerprint: str | None = None,
) -> None:
    """Record in provenance.json a session of `game` training in `run_dir` from global step
    `step`; `cohort`: the run's cohort ({"size", "slot", "seeds"}) when it trains in one;
    `key`: its results-version key (`envgen.results_version.version_key`; default the
    game); `fingerprint`: the code's (default `provenance.code_fingerprint(game)`)."""
    key = key or game
    fingerprint = fingerprint or provenance.code_fingerprint(game)
    run_dir = Path(run_dir)
    data = read_provenance(run_dir)
    if data is None:
        data = {"game": game, "results_version": RESULTS_VERSION[key], "sessions": []}
    elif data.get("results_version") != RESULTS_VERSION[key]:
        # Resuming would label a run that other code trained in part with the old version.
        raise EnvGenError(
            f"{run_dir}: started under results version {data.get('results_version')}, the "
            f"code's is {RESULTS_VERSION[key]}; remove the directory to start over"
        )
    data["code_fingerprint"] = fingerprint
    data["sessions"].append(
        {
            "event": "start" if step == 0 else "resume",
            "step": step,
            "started": now_utc(),
            "load_start": load_average(),
            "machine": provenance.machine(device),
            "software": provenance.software(),
            "threads": provenance.threads(env_workers),
            "kernels": provenance.kernel_settings(),
            "numerics": numerics.state(),
            **({"cohort": cohort} if cohort else {}),
            "code_fingerprint": fingerprint,
            "git": provenance.git_state(),
        }
    )
    write_json_atomic(run_dir / PROVENANCE, data)


def finish_run(run_dir: Path, step: int) -> None:
    """Close the open session (if any) at `step`, then seal the run (idempotent)."""
    if is_sealed(run_dir):
        return
    data = read_provenance(run_dir)
    if data and data.get("sessions") and "ended" not in data["sessions"][-1]:
        data["sessions"][-1].update(ended=now_utc(), end_step=step, load_end=load_average())
        write_json_atomic(Path(run_dir) / PROVENANCE, data)
    seal_run(run_dir)
