"""The project's copy of the paper's numbers: schema, a hand-typed sample, consistency."""

import crafter.constants
import pandas as pd
import pytest

from envgen.errors import StatsInputError
from envgen.stats.paper import (
    REPORTED_CSV,
    load_reported,
    load_reported_per_achievement,
    reported,
)
from envgen.stats.paper_claims import PAPER_CLAIMS, SAME_EXPERIMENT
from envgen.stats.runs import SampleStats


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    return load_reported()


def test_typed_columns_and_key(frame):
    assert frame.index.names == ["table", "row"] and frame.index.is_unique
    assert frame["score_mean"].dtype == "float64" and frame["total_steps"].dtype == "Int64"
    assert frame["llm_calls"].dtype == "string"
    assert frame.loc[("table1", "PPO + EnvGen"), "total_steps"] == 1_960_000
    assert frame.index.get_level_values("row").is_unique  # row labels alone are keys too


@pytest.mark.parametrize(
    "row, metric, expected",
    [  # typed from docs/paper.md, "Results"
        ("PPO + EnvGen", "score", (32.2, 0.6, 30)),
        ("AD + EnvGen", "reward", (13.7, 0.8, 30)),
        ("1.24M Crafter only", "score", (21.1, 2.3, 10)),
        ("GPT-3.5-Turbo (fixed)", "score", (21.5, 2.8, 30)),
        ("obfuscated parameter names", "score", (28.5, 0.6, 30)),
        ("Heist PPO + EnvGen", "score", (37.7, 7.5, 10)),
        ("Heist PPO", "reward", (4.1, 1.8, 10)),
    ],
)
def test_reported_values(frame, row, metric, expected):
    assert reported(frame, row, metric) == SampleStats(*expected)


def test_rows_without_numbers_or_runs_refuse_clearly(frame):
    with pytest.raises(StatsInputError, match="ELLM: the paper reports no score"):
        reported(frame, "ELLM")
    with pytest.raises(StatsInputError, match="DreamerV3: the paper's number of runs"):
        reported(frame, "DreamerV3")
    with pytest.raises(StatsInputError, match="no such row: expected exactly one"):
        reported(frame, "no such row")
    with pytest.raises(StatsInputError, match="metric"):
        reported(frame, "PPO", "return")


def test_same_experiment_labels_carry_identical_numbers(frame):
    columns = ["score_mean", "score_std", "reward_mean", "reward_std", "total_steps"]
    by_row = frame.reset_index().set_index("row")[columns]
    for alias, canonical in SAME_EXPERIMENT.items():
        assert by_row.loc[alias].tolist() == by_row.loc[canonical].tolist(), alias


def test_every_claim_names_reported_rows_in_the_papers_direction(frame):
    for claim in PAPER_CLAIMS:
        a, b = reported(frame, claim.a), reported(frame, claim.b)
        assert a.mean > b.mean, claim.name
    assert len({(c.a, c.b) for c in PAPER_CLAIMS}) == len(PAPER_CLAIMS)


def test_per_achievement_names_come_from_crafter():
    frame = load_reported_per_achievement()
    assert sorted(frame.index) == sorted(crafter.constants.achievements)
    assert frame.loc["collect_iron", ["ppo_1.96M_crafter", "ppo_envgen"]].tolist() == [18, 55]
    assert frame.loc["make_iron_sword", "ppo_envgen"] == 0.67


def test_malformed_file_names_the_column(tmp_path):
    text = REPORTED_CSV.read_text()
    renamed = tmp_path / "renamed.csv"
    renamed.write_text(text.replace("score_std", "score_sd", 1))
    with pytest.raises(StatsInputError, match=r"missing \['score_std'\], extra \['score_sd'\]"):
        load_reported(renamed)
    typo = tmp_path / "typo.csv"
    typo.write_text(text.replace(",32.2,0.6,", ",32.2,O.6,", 1))
    with pytest.raises(StatsInputError, match="typo.csv:score_std"):
        load_reported(typo)
    repeated = tmp_path / "repeated.csv"
    repeated.write_text(text + text.splitlines()[1] + "\n")
    with pytest.raises(StatsInputError, match="repeats"):
        load_reported(repeated)
    with pytest.raises(StatsInputError, match="file not found"):
        load_reported(tmp_path / "absent.csv")
