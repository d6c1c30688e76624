"""`envgen verify`, step 3a: each runs.json against its plan, not the other way round.

Trusting a runs.json's rows, a table's PPO row could point at PPO + EnvGen's folders and
every number would still re-derive. So the rows are derived from what the pipeline ran:
the replication file and profile (params.yaml's, or a campaign's own,
`envgen.campaign.registry.campaigns`) give each row's config hashes x seeds, and each row
must list exactly the planned runs finished in the store (sealed, of the code's results
version), in the plan's order, each at its planned folder; a row "done" must have all of
them (a campaign row, all its `planned_runs`). results/<table>/runs.json comes from
replication/<table>.yaml (dvc.yaml's train stage), unless a campaign writes there.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from envgen.campaign.registry import campaigns
from envgen.campaign.run import load_campaign
from envgen.errors import EnvGenError
from envgen.pipeline.job_status import job_dir, job_game, job_version_key
from envgen.pipeline.params_stage import load_settings
from envgen.pipeline.plan import plan_file
from envgen.store import is_current, is_sealed
from envgen.store.run_dir import RunDir

PARAMS = Path("params.yaml")


@dataclasses.dataclass(frozen=True)
class Planned:
    """What the pipeline plans for one runs.json."""

    source: str
    """The replication file and profile, for messages."""
    profile: str
    plan: Any
    """The `TablePlan`."""


def planned(runs_json: Path, params: Path = PARAMS, runs_root: Path = Path("results/runs")):
    """The plan behind `runs_json` (module docstring); a `ConfigError` names what is wrong."""
    for campaign in campaigns().values():
        if campaign.out_dir == runs_json.parent:
            plan, profile, _ = load_campaign(campaign.request(params, runs_root, commit=False))
            return Planned(f"{campaign.table} (campaign {campaign.name})", profile.name, plan)
    table = Path("replication") / f"{runs_json.parent.name}.yaml"
    profile, _ = load_settings(params, None)
    return Planned(
        f"{table} under profile {profile.name!r}", profile.name, plan_file(table, profile)
    )


def plan_differences(
    path: Path, table: dict[str, Any], runs_root: Path, lagging_ok: bool = False
) -> str | None:
    """Where the runs.json mapping `table` (read from `path`) departs from its plan, or
    None. A run the plan lists that is finished but stale is named too. `lagging_ok` (a
    registered campaign in progress, which shows run counts only): runs finished since
    runs.json was collected may be missing from it; every run it lists is still checked."""
    try:
        want = planned(path, runs_root=runs_root)
    except EnvGenError as exc:
        return f"{path}: its plan cannot be made ({exc})"
    plan = want.plan
    if table.get("table") != plan.table or table.get("profile") != want.profile:
        return (
            f"{path}: table {table.get('table')!r}, profile {table.get('profile')!r}; its plan "
            f"({want.source}) is table {plan.table!r}, profile {want.profile!r}"
        )
    rows = table.get("rows") or []
    names = [r.get("row") for r in rows]
    if names != [row.name for row in plan.rows]:
        return f"{path}: rows {names!r} are not the rows of {want.source}"
    for row, spec in zip(rows, plan.rows, strict=True):
        where = f"{path}: row {spec.name!r}"
        if row.get("config_hash") != spec.config_hash or row.get("game") != spec.game:
            return (
                f"{where}: config_hash {row.get('config_hash')!r}, game {row.get('game')!r}; "
                f"{want.source} gives {spec.config_hash!r}, {spec.game!r}"
            )
        try:  # finished: sealed and of the code's results version (damage raises)
            expected = [
                job
                for job in spec.jobs
                if is_sealed(job_dir(job, runs_root))
                and is_current(job_dir(job, runs_root), job_version_key(job))
            ]
        except EnvGenError as exc:
            return f"{where}: {exc}"
        listed = row.get("runs") or []
        keys = [(e.get("config_hash"), e.get("seed")) for e in listed]
        wanted = [job.key for job in expected]
        listed_keys = set(keys)
        if lagging_ok and listed_keys <= set(wanted) and len(listed_keys) == len(keys):
            expected = [job for job in expected if job.key in listed_keys]
            wanted = [job.key for job in expected]
        if keys != wanted:
            extra = [k for k in keys if k not in wanted]
            missing = [k for k in wanted if k not in keys]
            if extra:
                what = f"lists {_dir(runs_root, extra[0])}, which is not a finished run of this row"
            elif missing:
                what = f"leaves out the finished run {_dir(runs_root, missing[0])}"
            else:
                what = "lists its runs twice or out of the plan's order"
            return f"{where}: {what} (plan: {want.source})"
        for entry, job in zip(listed, expected, strict=True):
            initial_set = getattr(getattr(job, "config", None), "initial_set", 0)
            planned_dir = job_dir(job, runs_root).as_posix()
            if entry.get("run_dir") != planned_dir or entry.get("initial_set") != initial_set:
                return (
                    f"{where} seed {job.seed}: run_dir {entry.get('run_dir')!r}, initial_set "
                    f"{entry.get('initial_set')!r}; the plan gives {planned_dir!r}, {initial_set}"
                )
            if entry.get("game") != job_game(job):
                return f"{where} seed {job.seed}: game {entry.get('game')!r}, not {job_game(job)!r}"
        if row.get("status") == "done":
            planned_runs = row.get("planned_runs", len(spec.jobs))
            if planned_runs != len(spec.jobs) or (
                "planned_runs" not in row and len(expected) != len(spec.jobs)
            ):
                return (
                    f"{where}: status done with {len(expected)} of {len(spec.jobs)} planned "
                    f"runs finished (planned_runs {planned_runs!r})"
                )
    return None


def _dir(runs_root: Path, key: tuple[Any, Any]) -> str:
    return RunDir.of(runs_root, key[0], key[1]).root.as_posix()
