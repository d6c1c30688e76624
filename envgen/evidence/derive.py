"""Every number a run reports, derived again from its raw logs (`envgen verify`).

Whoever edits a number can rewrite the manifest too; agreement with the logs cannot be
forged that way. So every final-metrics field a table, plot CSV or CLAIMS.md shows is
derived here from the logs it summarises: score, reward, episodes, success rates and
first unlocks (Crafter: the episode log's final phase; Heist: the test episodes and
sub-goal rates), `global_steps` (the metrics log's last update; a random-policy run's
last episode), SFL's and PLR's `curation_steps` (each cycle's rollout file) and
`env_steps` (both together), `llm_calls` and `llm_replay` (the LLM call log), and the LLM
accounting's counts (and tokens, from the serving cache entries where all are there).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from envgen import json_input
from envgen.agents.runlog import read_jsonl
from envgen.envs.heist.metrics import summary as heist_summary
from envgen.errors import ConfigError, EnvGenError
from envgen.games import GAMES
from envgen.llm.slots import summarize_calls
from envgen.loop.config import RunConfig
from envgen.scoring import final_phase_summary, summarize
from envgen.store.manifest import read_run_bytes, run_file_exists
from envgen.store.run_dir import NOT_CONFIG, RunDir
from envgen.yaml_input import loads_mapping

ACCOUNTING_TOKENS = ("prompt_tokens", "completion_tokens")


def _json(path: Path) -> Any:
    return json_input.loads(read_run_bytes(path), path)


def run_config(run_dir: Path) -> RunConfig | None:
    """The run's config from its run.yaml (None for a random-policy run, which has none);
    one `EnvGenError` line when it is no config of this code."""
    path = RunDir(run_dir).config
    if not path.is_file():
        return None
    data = loads_mapping(read_run_bytes(path), path, "a run config")  # bounded: one line
    try:
        return RunConfig.from_dict({k: v for k, v in data.items() if k not in NOT_CONFIG})
    except ConfigError as exc:
        raise EnvGenError(f"{path}: not a run config of this code ({exc})") from None


def _calls(run_dir: Path) -> list[dict[str, Any]]:
    path = RunDir(run_dir).llm_calls
    if not path.is_file():
        return []
    calls = _json(path)
    if not isinstance(calls, list) or not all(isinstance(c, dict) for c in calls):
        raise EnvGenError(f"{path}: not a list of call records; restore it from git")
    return calls


def rederived(run_dir: Path, final: dict[str, Any]) -> dict[str, Any]:
    """The fields of `final` (a run's final metrics) that its logs determine, as
    the logs give them."""
    run = RunDir(Path(run_dir))
    random = final.get("method") == "random"
    game = GAMES.get(final.get("game", "crafter"))  # Crafter's final metrics name no game
    if game is not None and not game.rules.scored_in_training:
        summary = heist_summary(read_jsonl(run.test_episodes))
        keys = ("score", "reward", "episodes", "success_rate", "keys_collected", "doors_opened")
        derived = {k: summary[k] for k in keys}
    else:
        episodes = read_jsonl(run.episodes)
        if random:  # every episode is scored; unlocks in absolute steps
            summary = summarize(episodes)
            derived = {k: summary[k] for k in ("score", "reward", "episodes", "success_rates")}
            derived["global_steps"] = episodes[-1]["step"] if episodes else 0
        else:
            scored = final_phase_summary(episodes)
            if scored is None:
                raise EnvGenError(f"{run.root}: no episode of the final phase in its log")
            derived = dict(scored)
    if not random:
        metrics = run.metrics
        updates = read_jsonl(metrics) if run_file_exists(metrics) else []
        derived["global_steps"] = updates[-1]["step"] if updates else 0
        derived.update(_curation(run, final, derived["global_steps"]))
    calls = _calls(run.root)
    derived["llm_calls"] = len(calls)
    if not random:
        config = run_config(run.root)
        derived["llm_replay"] = summarize_calls(calls) if config and config.uses_llm else None
    return derived


def _curation(run: RunDir, final: dict[str, Any], global_steps: int) -> dict[str, int]:
    """`curation_steps` and `env_steps` from the rollout files of the run's cycles, for a
    run that has rollout files or says it took curation steps (a claim without files
    derives 0); nothing for other runs, whose final metrics do not carry the fields."""
    files = [f for cycle in run.cycles() for f in cycle.rollout_files()]
    if not files and "curation_steps" not in final:
        return {}
    curation = 0
    for path in files:
        record = _json(path)
        steps = record.get("env_steps") if isinstance(record, dict) else None
        if isinstance(steps, bool) or not isinstance(steps, int):
            raise EnvGenError(f"{path}: no whole env_steps count; restore it from git")
        curation += steps
    return {"curation_steps": curation, "env_steps": global_steps + curation}


def accounting_difference(run_dir: Path, cache_dir: Path) -> str | None:
    """Where a run's LLM accounting departs from its call log (and, where every
    serving entry is in `cache_dir`, from the tokens recorded with them), or None."""
    path = RunDir(Path(run_dir)).llm_accounting
    if not path.is_file():
        return None
    recorded = _json(path)
    calls = _calls(Path(run_dir))
    if not isinstance(recorded, dict):
        return f"{path}: not a mapping"
    derived: dict[str, Any] = {
        "calls": len(calls),
        "reasks": sum(bool(c.get("reask")) for c in calls),
        "cache_hits": sum(c.get("served") != "live" for c in calls),
    }
    entries = [_cache_entry(cache_dir, c.get("key")) for c in calls]
    if all(e is not None for e in entries):
        for key in ACCOUNTING_TOKENS:
            derived[key] = sum(int(e["response"]["usage"][key]) for e in entries if e)
    for key, value in derived.items():
        if recorded.get(key) != value:
            return f"{path}: {key} is {recorded.get(key)!r}, its call log gives {value!r}"
    return None


def _cache_entry(cache_dir: Path, key: Any) -> dict[str, Any] | None:
    if not isinstance(key, str) or not key.isalnum():
        return None
    path = Path(cache_dir) / f"{key}.json"
    try:
        entry = json_input.read(path) if path.is_file() else None
        usage = entry["response"]["usage"] if isinstance(entry, dict) else None
    except (EnvGenError, KeyError, TypeError):
        return None
    return entry if isinstance(usage, dict) else None
