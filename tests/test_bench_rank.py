"""`envgen bench rank`'s pure part: scores per budget and the agreement of two rankings."""

import pytest

from envgen.bench.rank_stats import (
    budget_scores,
    curriculum_order,
    fisher_interval,
    rank_agreement,
)
from envgen.cli import main
from envgen.scoring import ACHIEVEMENT_KEYS, summarize


def _episode(step: int, unlocked: int) -> dict:
    """An episode ending at `step` that unlocked the first `unlocked` achievements."""
    ep = {key: int(i < unlocked) for i, key in enumerate(ACHIEVEMENT_KEYS)}
    return {**ep, "length": 100, "reward": float(unlocked), "step": step}


def test_budget_scores_count_only_episodes_ended_by_the_budget():
    episodes = [_episode(100, 1), _episode(4096, 3), _episode(4097, 10)]
    got = budget_scores(episodes, [50, 4096, 10_000])
    assert got[0] == 0.0  # none finished: the curricula's 0.0
    assert got[1] == pytest.approx(summarize(episodes[:2])["score"])
    assert got[2] == pytest.approx(summarize(episodes)["score"])
    assert got[1] < got[2]


def test_curriculum_order_is_highest_first_ties_in_pool_order():
    assert curriculum_order([1.0, 3.0, 3.0, 0.5]) == [1, 2, 0, 3]


def test_rank_agreement_identical_reversed_and_partial():
    a = [float(i) for i in range(16)]
    same = rank_agreement(a, [2 * x for x in a])
    assert same["rho"] == 1.0 and same["top_overlap"] == same["bottom_overlap"] == 4
    assert same["overlap_chance"] == 1.0 and same["rho_ci95"] == [1.0, 1.0]
    flipped = rank_agreement(a, a[::-1])
    assert flipped["rho"] == -1.0 and flipped["top_overlap"] == flipped["bottom_overlap"] == 0
    swapped = a.copy()
    swapped[15], swapped[0] = swapped[0], swapped[15]  # easiest and hardest trade places
    got = rank_agreement(a, swapped)
    assert got["top_overlap"] == 3 and got["bottom_overlap"] == 3
    assert -1.0 < got["rho"] < 1.0
    low, high = got["rho_ci95"]
    assert low < got["rho"] < high  # 16 pairs: a wide interval


def test_fisher_interval_narrows_with_more_pairs():
    assert fisher_interval(0.9, 16) == [0.73, 0.97]  # tanh(atanh(0.9) -/+ 1.96/sqrt(13))
    wide, narrow = fisher_interval(0.5, 16), fisher_interval(0.5, 400)
    assert wide[1] - wide[0] > narrow[1] - narrow[0]
    assert fisher_interval(0.5, 3) is None


def test_rank_agreement_constant_scores_have_no_rho():
    assert rank_agreement([0.0] * 8, [float(i) for i in range(8)])["rho"] is None
    with pytest.raises(ValueError):
        rank_agreement([1.0] * 7, [1.0] * 7)


def test_bench_rank_help_names_the_budgets(capsys):
    with pytest.raises(SystemExit):
        main(["bench", "rank", "--help"])
    text = capsys.readouterr().out
    assert "--budgets" in text and "validation_steps" in text and "--pool-designer" in text
