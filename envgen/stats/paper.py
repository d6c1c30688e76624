"""The paper's reported numbers (data/paper/, see its README) as typed DataFrames.

`load_reported()` is the only reader of `reported_results.csv`; `reported()` turns one
row into the `SampleStats` our runs are compared with. The number of runs behind each
reported row is not in the CSV; `paper_runs` derives it by one documented rule.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from envgen.errors import StatsInputError
from envgen.stats.runs import SampleStats

DATA_DIR = Path(__file__).resolve().parents[2] / "data" / "paper"
REPORTED_CSV = DATA_DIR / "reported_results.csv"
PER_ACHIEVEMENT_CSV = DATA_DIR / "reported_per_achievement.csv"
FIRST_UNLOCK_CSV = DATA_DIR / "reported_first_unlock.csv"
LLM_COST_CSV = DATA_DIR / "reported_llm_cost.csv"

# Column -> dtype. Step counts are nullable integers (blank where the paper gives none);
# llm_calls and agent_params stay text because the paper mixes units ("2700 per
# episode", "unknown").
REPORTED_DTYPES: dict[str, str] = {
    "table": "string",
    "row": "string",
    "llm_env_steps_total": "Int64",
    "crafter_steps": "Int64",
    "total_steps": "Int64",
    "llm_calls": "string",
    "agent_params": "string",
    "score_mean": "float64",
    "score_std": "float64",
    "reward_mean": "float64",
    "reward_std": "float64",
    "source": "string",
}
METRICS = ("score", "reward")

# Runs behind a reported row (docs/paper.md, "Agent and training protocol" and
# Table 8): 30 = 3 initial LLM environment sets x 10 seeds for rows that use LLM
# environments; 10 seeds for Heist and for the authors' Crafter-only PPO/AD rows (the
# paper is silent; 10, not 30, is the conservative choice, docs/stats.md).
RUNS_WITH_LLM_ENVS = 30
RUNS_WITHOUT_LLM_ENVS = 10
AUTHORS_AGENTS = ("4M", "9M")  # PPO (~4M parameters) and AD (~9M), Table 1


def load_reported(path: Path = REPORTED_CSV) -> pd.DataFrame:
    """Every reported mean +/- std, indexed by (table, row), plus a derived `n_runs` column.
    Raises `StatsInputError` naming the column when the file's columns differ from
    `REPORTED_DTYPES`, a (table, row) key repeats, or a std is negative."""
    frame = _read_csv(path, REPORTED_DTYPES)
    for metric in METRICS:
        std = frame[f"{metric}_std"]
        if (std < 0).any():
            raise StatsInputError(f"{path.name}:{metric}_std", "a std is negative; fix the file")
    text = frame[["table", "agent_params", "llm_calls"]].astype(object).fillna("")
    frame["n_runs"] = pd.array([paper_runs(*values) for values in text.values], dtype="Int64")
    return _indexed(frame, ["table", "row"], path)


def paper_runs(table: str, agent_params: str, llm_calls: str) -> int | None:
    """Runs behind one reported row (see module comment); None for external baselines.
    Arguments are the row's CSV text, "" where blank."""
    if table == "table8":
        return RUNS_WITHOUT_LLM_ENVS
    if agent_params not in AUTHORS_AGENTS:
        return None
    return RUNS_WITHOUT_LLM_ENVS if llm_calls == "0" else RUNS_WITH_LLM_ENVS


def reported(frame: pd.DataFrame, row: str, metric: str = "score") -> SampleStats:
    """The paper's (mean, std, n) for a row label (labels are unique across tables)."""
    if metric not in METRICS:
        raise StatsInputError("metric", f"{metric!r} is not one of {', '.join(METRICS)}")
    matches = frame[frame.index.get_level_values("row") == row]
    if len(matches) != 1:
        raise StatsInputError(
            row, f"expected exactly one reported row with this label; found {len(matches)}"
        )
    record = matches.iloc[0]
    mean, std, n = record[f"{metric}_mean"], record[f"{metric}_std"], record["n_runs"]
    if pd.isna(mean) or pd.isna(std):
        raise StatsInputError(row, f"the paper reports no {metric} for this row")
    if pd.isna(n):
        raise StatsInputError(row, "the paper's number of runs is unknown (external baseline)")
    return SampleStats(mean=float(mean), std=float(std), n=int(n))


PER_ACHIEVEMENT_DTYPES: dict[str, str] = {
    "achievement": "string",
    "ppo_1.96M_crafter": "float64",
    "ppo_envgen": "float64",
    "ad_1.96M_crafter": "float64",
    "ad_envgen": "float64",
    "source": "string",
}


def load_reported_per_achievement(path: Path = PER_ACHIEVEMENT_CSV) -> pd.DataFrame:
    """Success rates in percent read off Figures 4 and 8 (approximate), indexed by achievement."""
    frame = _read_csv(path, PER_ACHIEVEMENT_DTYPES)
    rates = frame.drop(columns=["achievement", "source"])
    if ((rates < 0) | (rates > 100)).any().any():
        raise StatsInputError(path.name, "success rates must lie in [0, 100] percent")
    return _indexed(frame, ["achievement"], path)


FIRST_UNLOCK_DTYPES: dict[str, str] = {
    "achievement": "string",
    "ppo_1.96M_crafter": "Int64",
    "ppo_envgen": "Int64",
    "source": "string",
}


def load_reported_first_unlock(path: Path = FIRST_UNLOCK_CSV) -> pd.DataFrame:
    """Figure 5's earlier unlocks: first-unlock step of the final phase per agent, indexed by
    achievement; <NA> where the paper states only that EnvGen is earlier."""
    frame = _read_csv(path, FIRST_UNLOCK_DTYPES)
    steps = frame[["ppo_1.96M_crafter", "ppo_envgen"]]
    if (steps < 0).any().any():
        raise StatsInputError(path.name, "first-unlock steps must be >= 0")
    return _indexed(frame, ["achievement"], path)


def load_reported_llm_cost(path: Path = LLM_COST_CSV) -> dict[str, float]:
    """The paper's cost of one LLM call in USD: {"initial": .., "feedback": ..}."""
    frame = _read_csv(path, {"call": "string", "usd": "float64", "source": "string"})
    return {str(k): float(v) for k, v in _indexed(frame, ["call"], path)["usd"].items()}


def _read_csv(path: Path, dtypes: dict[str, str]) -> pd.DataFrame:
    if not path.is_file():
        raise StatsInputError(str(path), "file not found; run from a checkout that has data/paper/")
    frame = pd.read_csv(path, dtype="string", keep_default_na=False, na_values=[""])
    if list(frame.columns) != list(dtypes):
        missing = [c for c in dtypes if c not in frame.columns]
        extra = [c for c in frame.columns if c not in dtypes]
        raise StatsInputError(
            path.name,
            f"columns differ from the expected {list(dtypes)}: missing {missing}, extra {extra}",
        )
    for column, dtype in dtypes.items():
        if dtype == "string":
            continue
        try:
            frame[column] = frame[column].astype(dtype)
        except (TypeError, ValueError) as exc:
            raise StatsInputError(f"{path.name}:{column}", f"not {dtype}: {exc}") from None
    return frame


def _indexed(frame: pd.DataFrame, keys: list[str], path: Path) -> pd.DataFrame:
    repeated = frame[frame.duplicated(keys)]
    if len(repeated):
        first = tuple(repeated.iloc[0][keys])
        raise StatsInputError(
            f"{path.name}:{','.join(keys)}", f"key {first} repeats; keys must be unique"
        )
    return frame.set_index(keys if len(keys) > 1 else keys[0])
