"""A checkpoint's progress counters, checked before a run resumes from them.

They say where training resumes, and the logs are cut back to that step. The trainer
writes whole numbers >= 0 with `global_step = rollouts x rollout size`, `checkpoint_step
= global_step`, and only after the metrics line of that step (flushed): anything else is
a file this program did not write, refused in one line before anything is cut.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from envgen.agents.runlog import read_jsonl_written
from envgen.errors import EnvGenError

NAMES = ("global_step", "rollouts", "checkpoints", "checkpoint_step", "episodes_cut")


class ResumeRefusedError(EnvGenError):
    """A checkpoint a run will not resume from (its counters, or the file itself): the
    class name travels in a failed job's reason, so `envgen campaign status` says the
    resume was refused instead of showing the run as running."""


def checked_counters(
    raw: Any,
    checkpoint: Path,
    rollout_size: int,
    metrics_log: Path | None = None,
    fix: str | None = None,
) -> dict[str, int]:
    """`raw` (a checkpoint's counters) if consistent (module docstring), else a one-line
    `EnvGenError` naming `checkpoint`, the counter and `fix` (by default: remove the
    checkpoint's directory; a cohort's slices say to remove every seed's)."""
    fix = fix or f"remove {Path(checkpoint).parent} to resume from step 0"
    if not isinstance(raw, dict):
        raise ResumeRefusedError(
            f"{checkpoint}: counters is a {type(raw).__name__}, not a mapping; {fix}"
        )
    for name, value in raw.items():
        if name not in NAMES:
            raise ResumeRefusedError(f"{checkpoint}: unknown counter {str(name)[:40]!r}; {fix}")
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ResumeRefusedError(
                f"{checkpoint}: counter {name} is {repr(value)[:40]}, not a whole number >= 0; "
                f"{fix}"
            )
    step = raw.get("global_step", 0)
    if raw.get("rollouts", 0) * rollout_size != step:
        raise ResumeRefusedError(
            f"{checkpoint}: global_step {step} is not rollouts ({raw.get('rollouts', 0)}) x the "
            f"rollout size ({rollout_size}); {fix}"
        )
    if raw.get("checkpoint_step", step) != step:
        raise ResumeRefusedError(
            f"{checkpoint}: checkpoint_step {raw.get('checkpoint_step')} is not global_step "
            f"{step}; {fix}"
        )
    if metrics_log is not None and step > 0 and step not in _logged_steps(metrics_log):
        raise ResumeRefusedError(
            f"{checkpoint}: global_step {step}, but {metrics_log} has no update at that step "
            f"(the checkpoint is written after it); {fix}"
        )
    return dict(raw)


def _logged_steps(path: Path) -> set[int]:
    if not path.is_file():
        return set()
    return {record["step"] for record in read_jsonl_written(path)}
