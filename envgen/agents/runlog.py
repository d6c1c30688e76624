"""Append-only JSONL logs of a run (episodes, metrics), truncatable to a checkpoint's step.

Crafter episode lines use crafter's `stats.jsonl` schema (`length`, `reward` rounded to
0.1 as crafter does, `achievement_<name>` counts); Heist lines hold `HeistVecEnv`'s
sub-goal counts (`return`, `length`, `success`, keys and doors) for
`envgen.envs.heist.metrics.summary`. Both add `step` (global env step at which the
episode ended), `phase` and `config_index`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from envgen.errors import EnvGenError
from envgen.scoring import ACHIEVEMENTS
from envgen.store.manifest import RunStoreError, read_run_bytes


def episode_record(info: Mapping[str, Any], step: int, phase: str) -> dict[str, Any]:
    """A stats.jsonl line from a vec env's `infos[i]["episode"]`."""
    record: dict[str, Any] = {"length": int(info["length"]), "reward": round(info["return"], 1)}
    counts = info["achievements"]
    record.update({f"achievement_{name}": int(counts.get(name, 0)) for name in ACHIEVEMENTS})
    record.update(step=step, phase=phase, config_index=int(info["config_index"]))
    return record


HEIST_COUNTS = ("keys_collected", "keys_total", "doors_opened", "doors_total")


def heist_episode_record(info: Mapping[str, Any], step: int, phase: str) -> dict[str, Any]:
    """A Heist episode log line from `HeistVecEnv`'s `infos[i]["episode"]`."""
    record: dict[str, Any] = {
        "return": float(info["return"]),
        "length": int(info["length"]),
        "success": bool(info["success"]),
    }
    record.update({key: int(info[key]) for key in HEIST_COUNTS})
    record.update(step=step, phase=phase, config_index=int(info["config_index"]))
    return record


class JsonlLog:
    """One JSON object per line, flushed per write so a killed run loses nothing written."""

    def __init__(self, path: Path):
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._file = path.open("a", encoding="utf-8")

    def write(self, record: dict[str, Any]) -> None:
        self._file.write(json.dumps(record) + "\n")
        self._file.flush()

    def truncate_after(self, step: int) -> None:
        """Drop lines whose `step` exceeds `step` (a resumed run rewrites them), and a
        last line torn by a kill in mid-write."""
        self._file.close()
        kept = [
            line for line, record in _records(self.path, torn_ok=True) if record["step"] <= step
        ]
        tmp = self.path.with_suffix(self.path.suffix + ".tmp")
        tmp.write_text("".join(line + "\n" for line in kept), encoding="utf-8")
        os.replace(tmp, self.path)
        self._file = self.path.open("a", encoding="utf-8")

    def close(self) -> None:
        self._file.close()


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """All records of a JSONL run log (a sealed run's `.gz`, checked against its
    manifest, when only that exists); a damaged line is an `EnvGenError` naming it."""
    return [record for _, record in _records(path, torn_ok=False)]


def read_jsonl_written(path: Path) -> list[dict[str, Any]]:
    """The records of a plain log a live or killed run has written so far: a last line
    torn by the kill is left out (`envgen rerun` reads a run it stopped)."""
    return [record for _, record in _records(path, torn_ok=True)]


def _records(path: Path, torn_ok: bool) -> Iterator[tuple[str, dict[str, Any]]]:
    """(line, record) pairs of a run log; with `torn_ok`, an unparsable last line without
    its newline (a write cut short by a kill) is skipped."""
    try:
        if torn_ok:  # a log being appended to: never sealed
            with path.open(encoding="utf-8") as f:
                lines = f.readlines()
        else:
            lines = read_run_bytes(path).decode("utf-8").splitlines(keepends=True)
    except RunStoreError:
        raise
    except (OSError, UnicodeDecodeError) as exc:
        raise EnvGenError(f"{path}: unreadable run log ({exc})") from None
    for number, raw in enumerate(lines, 1):
        line = raw.rstrip("\n")
        if not line.strip():
            continue
        try:
            record = json.loads(line)
            if not isinstance(record, dict) or not isinstance(record.get("step"), int):
                raise ValueError("not a record with an integer 'step'")
        except (ValueError, RecursionError) as exc:  # RecursionError: [[[... nested
            if torn_ok and number == len(lines) and not raw.endswith("\n"):
                return  # torn by a kill: the resumed run writes it again
            raise EnvGenError(
                f"{path}:{number}: damaged log line ({exc}); resume the run (--resume drops "
                "a torn last line) or remove its directory to start over"
            ) from None
        yield line, record
