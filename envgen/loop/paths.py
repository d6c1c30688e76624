"""Where a run keeps what it produced: ``<runs_root>/<config-hash>/seed-<K>/``.

`final_metrics.json` is written when training ends; the run is finished once it is sealed
(`envgen.store`: logs gzipped, `provenance.json` closed, `manifest.json` written last).
Everything in an unsealed directory belongs to a run in progress (resumable) or to one
that stopped with an error; nothing reads it as a result.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any

import yaml

from envgen import json_input
from envgen.errors import EnvGenError
from envgen.json_input import JSONInputError
from envgen.loop.config import RunConfig
from envgen.store.manifest import RunStoreError, is_sealed, read_run_bytes


def read_json(path: Path) -> Any:
    """A run file's JSON, checked against the run's manifest when the run is sealed; a
    damaged one is an `EnvGenError` naming it and the fix."""
    try:
        return json_input.loads(read_run_bytes(path), path)
    except RunStoreError:
        raise
    except (OSError, JSONInputError) as exc:
        detail = exc.detail if isinstance(exc, JSONInputError) else exc
        raise EnvGenError(
            f"{path}: unreadable ({detail}); the run directory is damaged: remove "
            f"{path.parent} (or the run directory) and run it again with --resume"
        ) from None


@dataclasses.dataclass(frozen=True)
class RunPaths:
    """The files of one (config, seed) run."""

    root: Path
    """``<runs_root>/<config-hash>/seed-<K>``."""

    @classmethod
    def of(cls, runs_root: Path | str, config: RunConfig, seed: int) -> RunPaths:
        return cls(Path(runs_root) / config.config_hash() / f"seed-{seed}")

    @property
    def config(self) -> Path:
        return self.root / "run.yaml"

    @property
    def final_metrics(self) -> Path:
        return self.root / "final_metrics.json"

    @property
    def episodes(self) -> Path:
        return self.root / "episodes.jsonl"

    @property
    def llm_calls(self) -> Path:
        return self.root / "llm_calls.json"

    @property
    def llm_accounting(self) -> Path:
        return self.root / "llm_accounting.json"

    @property
    def finished(self) -> bool:
        """Sealed: the manifest, written last, exists."""
        return is_sealed(self.root)

    def cycle(self, index: int) -> Path:
        """Directory of cycle `index` (1-based): environments, feedback, evaluation."""
        return self.root / "cycles" / f"cycle-{index:02d}"

    def write_config(self, config: RunConfig, seed: int) -> None:
        """Record the run's protocol; refuse a directory that holds another one."""
        data = {"seed": seed, "config_hash": config.config_hash(), **config.to_dict()}
        if self.config.is_file():
            try:
                existing = yaml.safe_load(self.config.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError, yaml.YAMLError):
                existing = None  # damaged: it describes no run, so not this one
            if existing != data:
                raise EnvGenError(
                    f"{self.config} describes another run (or is damaged); remove {self.root} "
                    "to start over"
                )
            return
        self.root.mkdir(parents=True, exist_ok=True)
        tmp = self.config.with_name(self.config.name + ".tmp")
        tmp.write_text(yaml.safe_dump(data, sort_keys=True), encoding="utf-8")
        os.replace(tmp, self.config)
