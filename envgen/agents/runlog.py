"""Append-only JSONL logs of a run (episodes, metrics), truncatable to a checkpoint's step.

Crafter episode lines use crafter's `stats.jsonl` schema (`length`, `reward` rounded to
0.1 as crafter does, `achievement_<name>` counts); Heist lines hold the sub-goal counts
of `HeistVecEnv` (`return`, `length`, `success`, keys and doors), which
`envgen.envs.heist.metrics.summarise` reads as they are. Both add `step` (global env
step at which the episode ended), `phase` and `config_index`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from envgen.scoring import ACHIEVEMENTS


def episode_record(info: Mapping[str, Any], step: int, phase: str) -> dict[str, Any]:
    """A stats.jsonl line from a vec env's `infos[i]["episode"]`."""
    record: dict[str, Any] = {"length": int(info["length"]), "reward": round(info["return"], 1)}
    counts = info["achievements"]
    record.update({f"achievement_{name}": int(counts.get(name, 0)) for name in ACHIEVEMENTS})
    record.update(step=step, phase=phase, config_index=int(info["config_index"]))
    return record


HEIST_COUNTS = ("keys_collected", "keys_total", "doors_opened", "doors_total")


def heist_episode_record(info: Mapping[str, Any], step: int, phase: str) -> dict[str, Any]:
    """A Heist episodes.jsonl line from `HeistVecEnv`'s `infos[i]["episode"]`."""
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
        """Drop lines whose `step` exceeds `step` (a resumed run rewrites them)."""
        self._file.close()
        kept = [line for line in _lines(self.path) if json.loads(line)["step"] <= step]
        tmp = self.path.with_suffix(self.path.suffix + ".tmp")
        tmp.write_text("".join(line + "\n" for line in kept), encoding="utf-8")
        os.replace(tmp, self.path)
        self._file = self.path.open("a", encoding="utf-8")

    def close(self) -> None:
        self._file.close()


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """All records of a JSONL file."""
    return [json.loads(line) for line in _lines(path)]


def _lines(path: Path) -> Iterator[str]:
    with path.open(encoding="utf-8") as f:
        yield from (line.rstrip("\n") for line in f if line.strip())
