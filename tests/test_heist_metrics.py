"""Heist metrics: hand-checked summaries, and a tiny real test run."""

import numpy as np
import pytest

from envgen.envs.heist import HeistConfig
from envgen.envs.heist.metrics import run_episodes, summary


def _episode(success, keys, keys_total, doors, doors_total, length):
    return {
        "return": 10.0 * success,
        "length": length,
        "success": success,
        "keys_collected": keys,
        "keys_total": keys_total,
        "doors_opened": doors,
        "doors_total": doors_total,
    }


def test_summary_by_hand():
    m = summary(
        [
            _episode(True, 2, 2, 2, 2, 100),
            _episode(False, 1, 3, 0, 3, 1000),
            _episode(False, 0, 0, 0, 0, 1000),
            _episode(True, 0, 0, 0, 0, 60),
        ]
    )
    assert m == {
        "score": 50.0,
        "success_rate": 50.0,
        "reward": 5.0,
        "keys_collected": 60.0,
        "doors_opened": 40.0,
        "length": 540.0,
        "episodes": 4,
    }
    none = summary([_episode(False, 0, 0, 0, 0, 1000)])
    assert none["keys_collected"] is None and none["doors_opened"] is None
    assert none["score"] == 0.0
    with pytest.raises(ValueError, match="episodes"):
        summary([])


def test_run_episodes_gives_each_game_its_share():
    rng = np.random.default_rng(0)

    def policy(obs):
        return rng.integers(0, 15, len(obs))

    config = HeistConfig(maze_size=5, num_keys=0)
    episodes = run_episodes(policy, seed=0, episodes=7, num_envs=3, configs=(config,))
    assert len(episodes) == 7
    assert all(ep["maze_size"] == 5 and ep["config_index"] == 0 for ep in episodes)
    assert summary(episodes)["episodes"] == 7
