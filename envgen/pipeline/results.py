"""`results/<table>/runs.json`: one table's rows, their status and their runs' numbers.

The format (docs/pipeline.md, "runs.json") is what `envgen.report` reads. A row is
"done" only when every one of its runs finished; otherwise its status names the first
problem in the order of `PROBLEMS`, and `reason` says how to fix it.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from envgen.llm.slots import combine_summaries
from envgen.loop.identity import check_identity
from envgen.pipeline.job_status import DONE, NOT_RECORDED, PROBLEMS, JobResult, job_dir, job_game
from envgen.pipeline.plan import REPORTED_ONLY, Job, RandomJob, RowPlan, TablePlan
from envgen.pipeline.profile import Profile
from envgen.store.provenance import machine_label, read_provenance
from envgen.store.run_dir import RunDir, read_json

# The final metrics' keys every run entry copies: "score" is the game's table number
# (Crafter score %, Heist success rate %), "reward" its mean episode return.
RUN_KEYS = ("score", "reward", "llm_calls", "global_steps")
# ... and those of one game: Crafter's per-achievement numbers (Figures 4, 5), Heist's
# sub-goal rates (percent; None when no test level had keys).
GAME_RUN_KEYS = {
    "crafter": ("success_rates", "first_unlock_step"),
    "heist": ("keys_collected", "doors_opened"),
}


def table_results(
    plan: TablePlan,
    profile: Profile,
    results: Mapping[tuple[str, int], JobResult],
    runs_root: Path | str,
    versions: Mapping[str, int],
    fill_command: str = "",
) -> dict[str, Any]:
    """The runs.json mapping of one table, its runs checked against `versions` ({game:
    results version}); `fill_command` records its missing replies."""
    return {
        "table": plan.table,
        "caption": plan.caption,
        "profile": profile.name,
        "claim_grade": profile.claim_grade,
        "results_version": dict(versions),
        "rows": [_row(row, results, runs_root, fill_command) for row in plan.rows],
    }


def _row(
    row: RowPlan,
    results: Mapping[tuple[str, int], JobResult],
    runs_root: Path | str,
    fill_command: str,
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "row": row.name,
        "game": row.game,
        "config_hash": row.config_hash,
        "designer": row_designer(row),
        "reported_as": dict(row.reported_as) if row.reported_as else None,
        "runs": [],
    }
    if row.kind == REPORTED_ONLY:
        reason = "reported from the paper only (data/paper); this package does not train it"
        return {**out, "status": row.kind, "reason": reason}
    outcomes = [results[job.key] for job in row.jobs]
    out["runs"] = [
        _run(job, runs_root) for job, r in zip(row.jobs, outcomes, strict=True) if r.status == DONE
    ]
    replay = row_replay(out["runs"])
    if replay is not None:
        out["llm_replay"] = replay
    for status in PROBLEMS:
        problems = [r for r in outcomes if r.status == status]
        if problems:
            reason = f"{len(problems)} of {len(outcomes)} run(s) {status}: {problems[0].reason}"
            if status == NOT_RECORDED and fill_command:
                reason += f" Rows of a local model record with: {fill_command}"
            return {**out, "status": status, "reason": reason}
    return {**out, "status": DONE, "reason": ""}


def row_designer(row: RowPlan) -> str | None:
    """Who designs the row's environments: "llm:<model>", "heuristic", "random", or None
    (no designed environments). A verdict is claim-grade only for the paper's designer."""
    config = getattr(row.jobs[0], "config", None) if row.jobs else None
    if config is None or not config.uses_designer:
        return None
    return f"llm:{config.llm_model}" if config.uses_llm else config.designer


def _run(job: Job | RandomJob, runs_root: Path | str) -> dict[str, Any]:
    initial_set = job.config.initial_set if isinstance(job, Job) else 0
    return run_entry(job_dir(job, runs_root), job.seed, initial_set, job.key[0], job_game(job))


def run_entry(
    run_dir: Path, seed: int, initial_set: int, config_hash: str, game: str
) -> dict[str, Any]:
    """One run's entry in runs.json, from its final metrics and the machine of its
    provenance (also `envgen verify`); a run whose files describe another run than
    its folder names is refused (`envgen.loop.identity`)."""
    check_identity(run_dir)
    metrics = read_json(RunDir(run_dir).final_metrics)
    return {
        "seed": seed,
        "initial_set": initial_set,
        "config_hash": config_hash,
        "run_dir": run_dir.as_posix(),
        "game": game,
        "episodes": metrics["episodes"],
        **{key: metrics[key] for key in (*RUN_KEYS, *GAME_RUN_KEYS[game])},
        **({"llm_replay": metrics["llm_replay"]} if metrics.get("llm_replay") else {}),
        "machine": machine_label(read_provenance(run_dir)),
    }


def row_replay(runs: list[dict[str, Any]]) -> dict[str, Any] | None:
    """How a row's LLM replies were served, summed over its runs (None without LLM calls):
    calls exact / by slot / live, and the feedback drift in success-rate points."""
    replays = [r["llm_replay"] for r in runs if r.get("llm_replay")]
    if not replays:
        return None
    total = combine_summaries(replays)
    total["mean_drift"] = round(total["mean_drift"], 3)
    return total


def table_metrics(table: Mapping[str, Any]) -> dict[str, Any]:
    """`dvc metrics show` input: per done row, mean score and reward and the run count."""
    metrics: dict[str, Any] = {}
    for row in table["rows"]:
        runs = row["runs"]
        if row["status"] != DONE or not runs:
            continue
        metrics[row["row"]] = {
            "score": round(sum(r["score"] for r in runs) / len(runs), 4),
            "reward": round(sum(r["reward"] for r in runs) / len(runs), 4),
            "runs": len(runs),
        }
    return metrics


def metrics_and_scores(
    table: Mapping[str, Any], withheld: bool = False
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """metrics.json's and scores.json's data for `table`. `withheld` (a registered
    campaign before every planned run is in): run counts only and no point, so no interim
    score shows (docs/stats.md, "Campaign claims"). `collect` writes these and `envgen
    verify` re-derives them."""
    metrics = table_metrics(table)
    if withheld:
        return {row: {"runs": values["runs"]} for row, values in metrics.items()}, []
    return metrics, table_scores(table)


def table_scores(table: Mapping[str, Any]) -> list[dict[str, Any]]:
    """`dvc plots show` input: one record per finished run (row, seed, score, reward)."""
    return [
        {"row": row["row"], "seed": run["seed"], "score": run["score"], "reward": run["reward"]}
        for row in table["rows"]
        for run in row["runs"]
    ]
