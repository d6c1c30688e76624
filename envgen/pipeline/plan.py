"""Expand one replication file and a profile into rows of concrete (RunConfig, seed) jobs.

A replication file (replication/*.yaml) lists a table's rows in paper units: a `run:`
override of `RunConfig`, or `random_policy: true`, plus `reported_as` (the row the
paper reports it under) and a `reported_only` list of rows no one trains here. The
profile scales each row with the budget of the row's game (`Profile.for_game`: Crafter's
is the profile's own, Heist's its `games.heist` section); rows that end up equal, in
this table or another, get the same config hash and so the same run directory: they
are trained once.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from envgen.errors import ConfigError
from envgen.input_checks import read_yaml_mapping, safe_name
from envgen.llm.conversation import AUTO, auto_context
from envgen.loop.config import RunConfig
from envgen.pipeline.profile import Profile
from envgen.store.run_dir import random_folder

TRAIN, RANDOM, REPORTED_ONLY = "train", "random", "reported_only"
ROW_KEYS = ("row", "run", "random_policy", "reported_as")
TABLE_KEYS = ("table", "caption", "rows", "reported_only", "campaign")  # campaign: campaign_spec


@dataclasses.dataclass(frozen=True)
class Job:
    """One run: a concrete config and a seed."""

    config: RunConfig
    seed: int

    @property
    def key(self) -> tuple[str, int]:
        return (self.config.config_hash(), self.seed)


@dataclasses.dataclass(frozen=True)
class RandomJob:
    """The Random row for one seed: `episodes` uniform-random episodes in stock Crafter."""

    episodes: int
    seed: int

    @property
    def key(self) -> tuple[str, int]:
        return (random_folder(self.episodes), self.seed)


@dataclasses.dataclass(frozen=True)
class RowPlan:
    """One table row and the jobs that produce it."""

    name: str
    """The row's label, as in the replication file."""
    kind: str
    """train | random | reported_only."""
    jobs: tuple[Job | RandomJob, ...] = ()
    """Runs behind the row (initial sets x seeds for LLM methods, seeds otherwise)."""
    reported_as: Mapping[str, str] | None = None
    """{"table": .., "row": ..}: the paper row this row repeats, or None."""
    game: str | None = None
    """The game its runs play (the Random row: crafter); None for reported-only rows."""

    @property
    def config_hash(self) -> str | None:
        """The hash of the row's first initial set (the one its runs.json entry names)."""
        return self.jobs[0].key[0] if self.jobs else None


@dataclasses.dataclass(frozen=True)
class TablePlan:
    """A whole table under one profile."""

    table: str
    caption: str
    rows: tuple[RowPlan, ...]

    @property
    def jobs(self) -> list[Job | RandomJob]:
        """Every distinct job the table can run (train and random rows), in row order."""
        return unique_jobs(
            job for row in self.rows if row.kind in (TRAIN, RANDOM) for job in row.jobs
        )


def read_replication_file(path: Path | str) -> dict[str, Any]:
    """A replication file as a mapping, its keys checked (`plan_file` names the file)."""
    data = read_yaml_mapping(Path(path), "a replication table (table:, rows:)")
    unknown = sorted(set(data) - set(TABLE_KEYS))
    if unknown:
        raise ConfigError(unknown[0], f"unknown key; allowed: {', '.join(TABLE_KEYS)}")
    for key in ("table", "rows"):
        if key not in data:
            raise ConfigError(key, "missing; every replication file sets it")
    if not isinstance(data["rows"], list) or not all(isinstance(r, dict) for r in data["rows"]):
        raise ConfigError("rows", "must be a list of `- row: NAME` mappings")
    safe_name(data["table"], "table")  # names the table's output files
    for i, row in enumerate(data["rows"]):
        if not isinstance(row.get("row", ""), str):
            raise ConfigError(f"rows[{i}].row", "must be a string")
    return data


def plan_file(path: Path | str, profile: Profile) -> TablePlan:
    """`plan_table` of the replication file at `path`; its mistakes name the file."""
    try:
        return plan_table(read_replication_file(path), profile)
    except ConfigError as exc:
        raise exc.in_file(Path(path)) from None


def plan_table(spec: Mapping[str, Any], profile: Profile) -> TablePlan:
    """The table's rows as jobs under `profile` (see the module docstring); `spec` is a
    replication file as `read_replication_file` reads it."""
    rows = [_plan_row(spec["table"], row, profile) for row in spec["rows"]]
    rows += [RowPlan(name, REPORTED_ONLY) for name in spec.get("reported_only") or ()]
    return TablePlan(spec["table"], spec.get("caption", ""), tuple(rows))


def distinct_jobs(plans: Sequence[TablePlan]) -> list[Job | RandomJob]:
    """Every job of `plans` once, in table order: a row shared by tables trains once."""
    return unique_jobs(job for plan in plans for job in plan.jobs)


def unique_jobs(jobs: Iterable[Job | RandomJob]) -> list[Job | RandomJob]:
    """`jobs` without repeats (by key), in the order each first appears."""
    unique: dict[tuple[str, int], Job | RandomJob] = {}
    for job in jobs:
        unique.setdefault(job.key, job)
    return list(unique.values())


def _plan_row(table: str, row: Mapping[str, Any], profile: Profile) -> RowPlan:
    where = f"{table}.rows[{row.get('row', '?')}]"
    unknown = sorted(set(row) - set(ROW_KEYS))
    if unknown:
        raise ConfigError(f"{where}.{unknown[0]}", f"unknown key; allowed: {', '.join(ROW_KEYS)}")
    if "row" not in row:
        raise ConfigError(f"{where}.row", "missing; name every row")
    reported_as = row.get("reported_as")
    if row.get("random_policy"):
        jobs = tuple(RandomJob(profile.random_episodes, seed) for seed in profile.seeds)
        return RowPlan(row["row"], RANDOM, jobs, reported_as, "crafter")
    if not isinstance(row.get("run") or {}, dict):
        raise ConfigError(f"{where}.run", "must be a mapping of RunConfig field: value")
    try:
        paper = RunConfig.from_dict(row.get("run") or {})
    except ConfigError as exc:
        raise ConfigError(f"{where}.run.{exc.path}", exc.message) from None
    budget = profile.for_game(paper.game)
    sets = budget.initial_sets if paper.uses_designer else budget.initial_sets[:1]
    own = frozenset(row.get("run") or {})
    jobs = tuple(Job(profile.apply(paper, s, own), seed) for s in sets for seed in budget.seeds)
    applied = jobs[0].config
    if applied.llm_adapts and applied.llm_history_cycles == AUTO:  # the row's or the profile's
        try:  # refused here, not only as each of its runs starts
            auto_context(applied.llm_model)
        except ConfigError as exc:
            raise ConfigError(f"{where}.run.{exc.path}", exc.message) from None
    return RowPlan(row["row"], TRAIN, jobs, reported_as, paper.game)
