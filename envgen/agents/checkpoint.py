"""Atomic checkpoint files: written to a temporary name, then `os.replace`d into place.

A reader therefore sees either the previous complete checkpoint or the new one, never a
torn file, even when the run is killed while saving.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import torch

from envgen.errors import EnvGenError

LATEST = "latest.pt"
# What `Trainer.checkpoint` writes and `Trainer.resume` reads.
CHECKPOINT_KEYS = frozenset(
    {"model_cfg", "ppo_cfg", "seed", "model", "optimizer", "action_rng", "shuffle_rng", "counters"}
)


def save_checkpoint(directory: Path, payload: dict[str, Any]) -> Path:
    """Write `payload` as `directory/latest.pt` atomically; returns the path."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / LATEST
    tmp = path.with_suffix(".pt.tmp")
    with tmp.open("wb") as f:
        torch.save(payload, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    return path


def load_checkpoint(directory: Path, device: torch.device) -> dict[str, Any] | None:
    """The latest checkpoint in `directory`, or None when there is none."""
    path = directory / LATEST
    if not path.exists():
        return None
    try:
        state = torch.load(path, map_location=device, weights_only=False)
    except Exception as exc:  # torch raises many kinds on a truncated or foreign file
        raise EnvGenError(
            f"{path}: unreadable checkpoint ({type(exc).__name__}); it was not written by "
            f"this program or is damaged: remove {directory} to resume from step 0, or "
            "remove the run directory to start over"
        ) from None
    if not isinstance(state, dict) or not CHECKPOINT_KEYS <= set(state):
        raise EnvGenError(
            f"{path}: not a checkpoint of this program (keys missing); remove {directory} "
            "to resume from step 0"
        )
    return state
