"""`envgen verify`, step 3a: each runs.json row against what it rests on, not the other
way round (docs/pipeline.md, "Verify").

- **its plan**: a row could point at another row's folders and every number would still
  re-derive, so the rows come from what the pipeline ran: the replication file and
  profile (params.yaml's, or a campaign's own) give each row's config hashes x seeds,
  and a row lists exactly those runs finished in the store (sealed, current), in order,
  at their planned folders; a row "done" has all of them (a campaign's, its
  `planned_runs`). results/<table>/runs.json is replication/<table>.yaml's (dvc.yaml's
  train stage) unless a campaign writes there.
- **its label**: a `not_recorded` or `llm_unusable` row has no run; its reason must be
  a cache miss of the row's own model and slot whose key the cache still lacks, or a
  cached reply of its model to the named call (or a re-ask) that, parsed again, fails
  with the reason's words. A miss's key is not recomputed: that needs the training.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from envgen.campaign.registry import campaigns
from envgen.campaign.run import load_campaign
from envgen.errors import EnvGenError, LLMResponseError
from envgen.llm.cache import ResponseCache
from envgen.llm.conversation import REASK_SUFFIX
from envgen.llm.parse import parse_environments
from envgen.pipeline.job_status import (
    LLM_UNUSABLE,
    NOT_RECORDED,
    job_dir,
    job_game,
    job_version_key,
)
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


# --- labels ------------------------------------------------------------------------------
_COUNT = r"\d+ of \d+ run\(s\) "
_MISS = re.compile(
    _COUNT + NOT_RECORDED + r": no recorded reply for model '(?P<model>[^']+)', call "
    r"'(?P<call>[^']+)', (?:slot (?P<slot>\S+), )?request key (?P<key>[0-9a-f]{64}) in "
)
_UNUSABLE = re.compile(_COUNT + LLM_UNUSABLE + r": (?P<call>[^:\s]+): (?P<words>.+)")
_N = re.compile(r"/n(\d+)/")


def label_problem(row: Mapping[str, Any], cache: ResponseCache) -> str | None:
    """Why `row`'s not_recorded or llm_unusable label or reason is not what the cache
    gives, or None (also for any other status)."""
    status, reason = row.get("status"), str(row.get("reason") or "")
    if status not in (NOT_RECORDED, LLM_UNUSABLE):
        return None
    designer = row.get("designer") or ""
    model = designer.removeprefix("llm:") if designer.startswith("llm:") else None
    if model is None:
        return f"{status}, but the row has no LLM designer ({designer or 'none'})"
    if status == NOT_RECORDED:
        return _miss_problem(row, reason, model, cache)
    return _unusable_problem(row, reason, model, cache)


def _miss_problem(
    row: Mapping[str, Any], reason: str, model: str, cache: ResponseCache
) -> str | None:
    miss = _MISS.match(reason)
    if miss is None:
        return f"not_recorded, but its reason is not a cache miss: {reason[:80]!r}"
    if miss["model"] != model:
        return f"not_recorded for model {miss['model']!r}; the row's designer is {model!r}"
    slot = miss["slot"]
    if slot is not None and not (
        slot.startswith(f"{row.get('config_hash')}/seed-") and slot.endswith(f"/{miss['call']}")
    ):
        return f"not_recorded in slot {slot}, not a slot of this row's call {miss['call']!r}"
    if cache.load(miss["key"]) is not None:
        return (
            f"not_recorded, but {cache.directory} holds the reply to request key "
            f"{miss['key']}: the row replays; run its stage again"
        )
    return None


def _unusable_problem(
    row: Mapping[str, Any], reason: str, model: str, cache: ResponseCache
) -> str | None:
    unusable = _UNUSABLE.match(reason)
    n = _N.search(unusable["call"]) if unusable else None
    if unusable is None or n is None:
        return f"llm_unusable, but its reason names no call that gave up: {reason[:80]!r}"
    call, words = unusable["call"], unusable["words"].strip()
    game = str(row.get("game") or "crafter")
    for _, entry in cache.entries():
        label = str(entry.get("label"))
        if not (label == call or label.startswith(call + REASK_SUFFIX)):
            continue
        if entry["request"]["model"] != model:
            continue
        for obfuscated in (False, True):
            try:
                parse_environments(
                    entry["response"]["text"], int(n[1]), game, obfuscated=obfuscated
                )
            except LLMResponseError as exc:
                if str(exc).splitlines()[0].strip() == words:
                    return None
    return (
        f"llm_unusable at call {call!r}, but {cache.directory} holds no reply of "
        f"{model!r} to it that fails that way ({words[:60]!r})"
    )
