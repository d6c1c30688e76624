"""A run's directory, named in one place: ``<runs_root>/<config-hash>/seed-<K>/``.

`RunDir` is the only place a run file's name is spelled: built from a runs root, a
config hash and a seed (`RunDir.of`), parsed back from a path (`seed`, `config_hash`),
each file a property. A run is finished once sealed (`envgen.store.manifest`); an
unsealed directory is a run in progress or one that failed, never read as a result. A
random-policy run lies in ``random-<N>ep/seed-<K>/`` and has no run.yaml.
"""

from __future__ import annotations

import dataclasses
import os
import re
from pathlib import Path
from typing import Any

import yaml

from envgen import json_input, yaml_input
from envgen.errors import EnvGenError
from envgen.json_input import JSONInputError
from envgen.store.manifest import CHECKPOINT_DIR, MANIFEST, RunStoreError, is_sealed, read_run_bytes
from envgen.store.provenance import PROVENANCE

SEED_DIR = re.compile(r"seed-(0|[1-9][0-9]{0,8})")
RANDOM_DIR = re.compile(r"random-([1-9][0-9]{0,8})ep")
METRICS_LOG, EPISODES_LOG = "metrics.jsonl", "episodes.jsonl"  # the trainer's two logs
FINAL_METRICS, LLM_ACCOUNTING = "final_metrics.json", "llm_accounting.json"  # in CLAIMS.md
NOT_CONFIG = ("seed", "config_hash")  # run.yaml's record of the run, not config fields
FIX = "restore it from git (git checkout -- PATH) or remove it and train it again"


class RunIdentityError(RunStoreError):
    """A run folder whose name, files or links disagree with the run they hold."""


def _file(name: str, doc: str) -> property:
    return property(lambda self: self.root / name, doc=doc)


def random_folder(episodes: int) -> str:
    """The config-hash folder of a random-policy run of `episodes` episodes (no config)."""
    return f"random-{episodes}ep"


@dataclasses.dataclass(frozen=True)
class CycleDir:
    """The files of one EnvGen cycle: ``cycles/cycle-NN/``."""

    root: Path

    @property
    def index(self) -> int:
        """The 1-based cycle number its folder names."""
        return int(self.root.name.removeprefix("cycle-"))

    environments = _file("environments.json", "The cycle's worlds, as designed.")
    feedback = _file("feedback.txt", "The feedback sent to the designer (cycles 2 on).")
    evaluation = _file("evaluation.json", "Per-skill success in the original game.")
    adversarial_test = _file("adversarial_test.json", "The adversarial baseline's test.")

    def rollouts(self, kind: str) -> Path:
        """A curating designer's rollouts of its candidates (`kind`: "sfl" or "plr")."""
        return self.root / f"{kind}_rollouts.json"

    def rollout_files(self) -> list[Path]:
        """Every designer's rollout file of the cycle, sorted."""
        return sorted(self.root.glob("*_rollouts.json"))


@dataclasses.dataclass(frozen=True)
class RunDir:
    """The files of one (config, seed) run, or of any trainer's output directory."""

    root: Path
    """``<runs_root>/<config-hash>/seed-<K>``."""

    @classmethod
    def of(cls, runs_root: Path | str, config_hash: str, seed: int) -> RunDir:
        return cls(Path(runs_root) / config_hash / f"seed-{seed}")

    @classmethod
    def seeds_of(cls, config_dir: Path | str) -> list[RunDir]:
        """The run directories of one config folder (``seed-*``), sorted."""
        return [cls(p) for p in sorted(Path(config_dir).glob("seed-*")) if p.is_dir()]

    @classmethod
    def under(cls, runs_root: Path | str) -> list[RunDir]:
        """Every run directory under `runs_root` (``*/seed-*``), sorted."""
        return [cls(p) for p in sorted(Path(runs_root).glob("*/seed-*")) if p.is_dir()]

    @property
    def seed(self) -> int | None:
        """The seed its folder names, or None when the folder is not ``seed-<K>``."""
        match = SEED_DIR.fullmatch(self.root.name)
        return None if match is None else int(match[1])

    @property
    def config_hash(self) -> str:
        """The name of the folder above: the config hash (or ``random-<N>ep``)."""
        return self.root.parent.name

    @property
    def random_episodes(self) -> int | None:
        """N of a random-policy run's ``random-<N>ep`` folder; None for other runs."""
        match = RANDOM_DIR.fullmatch(self.config_hash)
        return None if match is None else int(match[1])

    @property
    def run_id(self) -> str:
        """``<config-hash>/seed-<K>``: the run's name in slots and tables."""
        return f"{self.config_hash}/{self.root.name}"

    config = _file("run.yaml", "The run's protocol: its config fields, seed and hash.")
    final_metrics = _file(FINAL_METRICS, "Written when training ends.")
    episodes = _file(EPISODES_LOG, "One line per training episode (crafter's schema).")
    metrics = _file(METRICS_LOG, "One line per PPO update.")
    test_episodes = _file("test_episodes.jsonl", "Heist's test episodes of the final agent.")
    llm_calls = _file("llm_calls.json", "Every LLM call, in order, with how it was served.")
    llm_accounting = _file(LLM_ACCOUNTING, "The LLM calls' tokens and cost.")
    validation = _file("validation.json", "The easy-to-hard curriculum's validation ranking.")
    validation_agents = _file("validation", "The validation agents' own directories.")
    provenance = _file(PROVENANCE, "Machine, software and sessions (envgen.store.provenance).")
    manifest = _file(MANIFEST, "Written last when sealed (envgen.store.manifest).")
    checkpoints = _file(CHECKPOINT_DIR, "What a run in progress resumes from; never a result.")
    cycles_root = _file("cycles", "The cycles' folders.")
    summary = _file("summary.json", "`envgen train`'s score over its last steps.")

    @property
    def finished(self) -> bool:
        """Sealed: the manifest, written last, exists."""
        return is_sealed(self.root)

    def cycle(self, index: int) -> CycleDir:
        """The folder of cycle `index` (1-based): environments, feedback, evaluation."""
        return CycleDir(self.cycles_root / f"cycle-{index:02d}")

    def cycles(self) -> list[CycleDir]:
        """The cycles' folders that exist, in order."""
        return [CycleDir(p) for p in sorted(self.cycles_root.glob("cycle-*")) if p.is_dir()]

    def read_config(self) -> dict[str, Any]:
        """run.yaml as written (config fields plus `seed` and `config_hash`), checked
        against the manifest when sealed; `RunIdentityError` when it is no mapping."""
        data = yaml_input.loads(read_run_bytes(self.config), self.config)
        if not isinstance(data, dict):
            kind = type(data).__name__
            raise RunIdentityError(f"{self.config}: holds a {kind}, not a run config; {FIX}")
        return data

    def write_config(self, config: Any, seed: int) -> None:
        """Record the run's protocol (`config`: a RunConfig); refuse a directory that
        holds another one."""
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


def read_json(path: Path) -> Any:
    """A run file's JSON, checked against the run's manifest when the run is sealed; a
    damaged one is an `EnvGenError` naming it and the fix."""
    try:
        return json_input.loads(read_run_bytes(path), path)  # a run file: never an OSError
    except JSONInputError as exc:
        raise EnvGenError(
            f"{path}: unreadable ({exc.detail}); the run directory is damaged: remove "
            f"{path.parent} (or the run directory) and run it again with --resume"
        ) from None
