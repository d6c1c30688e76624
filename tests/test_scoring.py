"""Crafter score and success rates against hand-computed values."""

import math

import crafter.constants
import pytest

from envgen.scoring import ACHIEVEMENT_KEYS, ACHIEVEMENTS, crafter_score, success_rates, summarize


def _episode(reward=1.0, length=10, **counts):
    ep = {"length": length, "reward": reward}
    ep.update({key: 0 for key in ACHIEVEMENT_KEYS})
    ep.update({f"achievement_{k}": v for k, v in counts.items()})
    return ep


def test_achievements_come_from_crafter():
    assert ACHIEVEMENTS == tuple(crafter.constants.achievements)
    assert len(ACHIEVEMENTS) == 22


def test_score_hand_computed():
    assert crafter_score([0.0] * 22) == 0.0
    assert crafter_score([100.0] * 22) == pytest.approx(100.0)
    # one achievement at 100%, the rest at 0: exp(ln(101) / 22) - 1
    rates = [100.0] + [0.0] * 21
    assert crafter_score(rates) == pytest.approx(math.exp(math.log(101) / 22) - 1)
    assert crafter_score(rates) == pytest.approx(0.2335, abs=1e-4)


def test_score_rejects_bad_input():
    with pytest.raises(ValueError, match="22 values"):
        crafter_score([1.0] * 21)
    with pytest.raises(ValueError, match=r"\[0, 100\]"):
        crafter_score([0.5] * 21 + [101.0])


def test_success_rates_count_unlocked_at_least_once():
    episodes = [_episode(collect_wood=3), _episode(collect_wood=1, place_table=1), _episode()]
    rates = success_rates(episodes)
    assert list(rates) == list(ACHIEVEMENTS)
    assert rates["collect_wood"] == pytest.approx(200 / 3)
    assert rates["place_table"] == pytest.approx(100 / 3)
    assert rates["collect_diamond"] == 0.0
    with pytest.raises(ValueError, match="at least one"):
        success_rates([])


def test_summarize():
    episodes = [_episode(reward=2.0, length=100, collect_wood=1), _episode(reward=0.0, length=50)]
    out = summarize(episodes)
    assert out["reward"] == 1.0 and out["length"] == 75.0 and out["episodes"] == 2
    expected = [50.0 if name == "collect_wood" else 0.0 for name in ACHIEVEMENTS]
    assert out["score"] == pytest.approx(crafter_score(expected))
