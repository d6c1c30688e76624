"""Atomic checkpoint files: written to a temporary name, then `os.replace`d into place.

A reader therefore sees either the previous complete checkpoint or the new one, never a
torn file, even when the run is killed while saving.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import torch

LATEST = "latest.pt"


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
    return torch.load(path, map_location=device, weights_only=False)
