"""Checkpoint files: atomic, device-neutral, and read without running code from the file.

Written to a temporary name, then `os.replace`d into place: a reader sees the previous
complete checkpoint or the new one, never a torn file, even if the run is killed.

Reading runs no code: the file holds only tensors and plain values, read with
`torch.load(weights_only=True)`, which refuses anything else; NumPy arrays (the running
envs' state) are stored as byte tensors tagged with dtype and shape (`_storable`). A run
directory received from someone else cannot execute anything when a run resumes from it.

Device-neutral: tensors are saved on the CPU and loaded onto the run's device, so a GPU's
checkpoint resumes on a CPU and the reverse (the action generator: `RolloutLoop.resume`).
"""

from __future__ import annotations

import collections
import contextlib
import os
from pathlib import Path
from typing import Any

import numpy as np
import torch

from envgen.agents.checkpoint_counters import ResumeRefusedError
from envgen.errors import EnvGenError
from envgen.store.manifest import LATEST_CHECKPOINT

LATEST = LATEST_CHECKPOINT.name
# What every checkpoint slice holds (`RolloutLoop._slice`) and `RolloutLoop.resume` reads.
CHECKPOINT_KEYS = frozenset(
    {"model_cfg", "ppo_cfg", "seed", "model", "optimizer", "action_rng", "shuffle_rng", "counters"}
)
_ARRAY_TAG = "__ndarray__"
_ARRAY_KINDS = "biuf"  # bool, signed, unsigned, float: never object or structured dtypes


def save_checkpoint(directory: Path, payload: dict[str, Any]) -> Path:
    """Write `payload` as `directory`'s latest checkpoint (`LATEST`) atomically; its path.

    TypeError when it holds a value a safe load could not read back (`_storable`). A
    failed write (a full disk: torch raises RuntimeError) is one `EnvGenError` line naming
    the file; the temporary file is removed and the previous checkpoint kept to resume."""
    stored = _storable(payload)
    path = directory / LATEST
    tmp = path.with_suffix(".pt.tmp")
    try:
        directory.mkdir(parents=True, exist_ok=True)
        with tmp.open("wb") as f:
            torch.save(stored, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except (OSError, RuntimeError) as exc:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise EnvGenError(
            f"{path}: the checkpoint could not be written ({why.splitlines()[0][:200]}); "
            "free space on that disk, then run the same command again: it resumes from the "
            "previous checkpoint"
        ) from None
    return path


def load_checkpoint(
    directory: Path, device: torch.device, name: str = LATEST
) -> dict[str, Any] | None:
    """The checkpoint `name` (the latest by default) in `directory`, None when there is
    none: tensors on `device`, arrays as NumPy arrays. One-line `EnvGenError` naming the
    file when it is damaged, foreign, of an older format or holds code."""
    path = directory / name
    if not path.exists():
        return None
    try:
        state = torch.load(path, map_location=device, weights_only=True)
        state = _restored(state)
    except Exception as exc:  # torch raises many kinds on a truncated, foreign or unsafe file
        raise ResumeRefusedError(
            f"{path}: unreadable checkpoint ({type(exc).__name__}); it holds objects other "
            "than tensors and plain values, was written by another program or version, or "
            f"is damaged: remove {directory} to resume from step 0, or remove the run "
            "directory to start over"
        ) from None
    if not isinstance(state, dict) or not CHECKPOINT_KEYS <= set(state):
        raise ResumeRefusedError(
            f"{path}: not a checkpoint of this program (keys missing); remove {directory} "
            "to resume from step 0"
        )
    return state


def _storable(value: Any) -> Any:
    """`value` with tensors on the CPU and NumPy arrays as tagged byte tensors."""
    if value is None or type(value) in (bool, int, float, str, bytes):
        return value
    if isinstance(value, torch.Tensor):
        return value.detach().cpu()
    if isinstance(value, np.ndarray):
        if value.dtype.kind not in _ARRAY_KINDS:
            raise TypeError(f"checkpoint: arrays of dtype {value.dtype} cannot be stored")
        data = np.ascontiguousarray(value).view(np.uint8).reshape(-1).copy()
        return {
            _ARRAY_TAG: value.dtype.str,
            "shape": tuple(value.shape),
            "data": torch.from_numpy(data),
        }
    if type(value) is dict:
        return {key: _storable(item) for key, item in value.items()}
    if type(value) is collections.OrderedDict:  # a module's state_dict, with its _metadata
        out = collections.OrderedDict((key, _storable(item)) for key, item in value.items())
        if hasattr(value, "_metadata"):
            out._metadata = value._metadata  # type: ignore[attr-defined]
        return out
    if type(value) in (list, tuple):
        return type(value)(_storable(item) for item in value)
    raise TypeError(f"checkpoint: a {type(value).__name__} cannot be stored safely")


def _restored(value: Any) -> Any:
    """Inverse of `_storable` (tensors stay where `torch.load` put them)."""
    if type(value) is dict:
        if _ARRAY_TAG in value:
            return _array(value)
        return {key: _restored(item) for key, item in value.items()}
    if type(value) in (list, tuple):
        return type(value)(_restored(item) for item in value)
    return value


def _array(tagged: dict[str, Any]) -> np.ndarray:
    dtype = np.dtype(str(tagged[_ARRAY_TAG]))
    if dtype.kind not in _ARRAY_KINDS or dtype.hasobject:
        raise ValueError(f"array of dtype {dtype}")
    shape, data = tagged["shape"], tagged["data"]
    if not isinstance(data, torch.Tensor) or data.dtype != torch.uint8 or data.dim() != 1:
        raise ValueError("array data: expected a flat byte tensor")
    if not isinstance(shape, tuple) or not all(type(n) is int and n >= 0 for n in shape):
        raise ValueError("array shape: expected a tuple of sizes")
    return data.cpu().numpy().view(dtype).reshape(shape).copy()
