"""HeistVecEnv / HeistEnv on the real procgen engine: levels as promised, edits held,
exact episode accounting, determinism."""

import numpy as np
import pytest

from envgen.envs.heist import HeistConfig, HeistEnv, HeistVecEnv, edits
from envgen.envs.heist.engine import Engine
from envgen.envs.heist.env import REACH
from envgen.envs.heist.levels import BANK_SEEDS
from envgen.envs.heist.state import KEY, parse, serialise

WORLD = {"easy": 9, "hard": 13}


def _assert_level_as_promised(env: HeistVecEnv, i: int, config: HeistConfig) -> None:
    state = env.state(i)
    assert state.world_dim == WORLD[config.distribution_mode]
    if config.maze_size is not None:
        assert edits.maze_size(state) == config.maze_size
    if config.num_keys is not None:
        assert edits.colours(state) == config.num_keys
    held = min(config.keys_held, edits.colours(state))
    assert state.has_keys[:held] == [True] * held
    assert edits.keys_on_floor(state) == edits.colours(state) - held


@pytest.mark.parametrize(
    "config",
    [
        HeistConfig(maze_size=9, num_keys=1, keys_held=1),
        HeistConfig(maze_size=5, num_keys=0),
        HeistConfig(maze_size=7, keys_held=2),
        HeistConfig(distribution_mode="hard", maze_size=13, num_keys=2),
        HeistConfig(distribution_mode="hard", maze_size=5, num_keys=1),
    ],
    ids=lambda c: f"{c.distribution_mode}-{c.maze_size}-{c.num_keys}-{c.keys_held}",
)
def test_generated_levels_have_the_promised_size_and_keys(config):
    with HeistVecEnv((config,), 6, seed=1) as env:
        env.reset()
        for i in range(env.num_envs):
            _assert_level_as_promised(env, i, config)
        rng = np.random.default_rng(0)
        starts = 0
        for step in range(1100):  # past the 1000-step timeout: every game plays a second level
            _, _, term, trunc, infos = env.step(rng.integers(0, 15, env.num_envs))
            for i in np.flatnonzero(term | trunc):
                starts += 1
                _assert_level_as_promised(env, i, config)
                if config.maze_size is not None:
                    assert infos[i]["episode"]["maze_size"] == config.maze_size
            if step % 250 == 0:  # mid-episode, the edits still hold
                for i in range(env.num_envs):
                    state = env.state(i)
                    held = min(config.keys_held, state.num_keys)
                    assert state.has_keys[:held] == [True] * held
                    if config.num_keys is not None:
                        assert state.num_keys == len(state.has_keys) == config.num_keys
    assert starts >= env.num_envs


def test_mixture_spreads_configs_over_games_and_switches_at_once():
    configs = (HeistConfig(maze_size=5, num_keys=0), HeistConfig(maze_size=7, num_keys=0))
    env = HeistVecEnv(configs, 8, seed=2, weights=(1.0, 3.0))
    assert env.config_indices == [0, 0, 1, 1, 1, 1, 1, 1]
    env.reset()
    rng = np.random.default_rng(2)
    episodes = []
    for _ in range(1100):  # past the timeout: every game ends an episode
        _, _, _, _, infos = env.step(rng.integers(0, 15, env.num_envs))
        episodes += [(i, info["episode"]) for i, info in enumerate(infos) if info]
    assert {i for i, _ in episodes} == set(range(8))
    for i, ep in episodes:
        assert ep["config_index"] == env.config_indices[i]
        assert ep["maze_size"] == configs[ep["config_index"]].maze_size
    before = env.last_obs
    env.set_mixture(configs[:1])
    assert env.config_indices == [0] * 8
    assert {edits.maze_size(env.state(i)) for i in range(8)} == {5}
    assert not np.array_equal(env.last_obs, before)
    with pytest.raises(ValueError, match="weights"):
        env.set_mixture(configs, weights=[0.0, 0.0])
    env.close()


def test_stock_config_plays_procgens_full_seed_range():
    env = HeistVecEnv((HeistConfig(),), 4, seed=0)
    env.reset()
    seeds = [env.state(i).game.current_level_seed for i in range(4)]
    assert max(seeds) > BANK_SEEDS and env.state(0).world_dim == 9
    env.close()


def test_same_seed_same_episodes():
    def rollout(seed: int):
        env = HeistVecEnv((HeistConfig(), HeistConfig(maze_size=5)), 3, seed=seed)
        frames = [env.reset()]
        rng = np.random.default_rng(0)
        rewards, infos = [], []
        for _ in range(150):
            obs, rew, _, _, info = env.step(rng.integers(0, 15, 3))
            frames.append(obs)
            rewards.append(rew)
            infos.append(info)
        env.close()
        return np.stack(frames), np.stack(rewards), infos

    a, b, c = rollout(5), rollout(5), rollout(6)
    assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1]) and a[2] == b[2]
    assert not np.array_equal(a[0], c[0])
    assert a[0].dtype == np.uint8 and a[0].shape == (151, 3, 64, 64, 3)
    assert a[1].dtype == np.float32


def test_timeout_counts_a_key_taken_on_the_very_last_step():
    """Truncation is exact: the final step's pickup is seen through the scratch replay."""
    env = HeistVecEnv((HeistConfig(maze_size=9, num_keys=2),), 1, seed=4)
    env.reset()
    for _ in range(999):
        _, _, term, trunc, _ = env.step([4])  # stand still
        assert not (term[0] or trunc[0])
    state = env.state(0)
    key = state.entities[state.of_type(KEY)[0]]
    agent = state.entities[0]
    agent["x"], agent["y"] = key["x"], key["y"]
    env._engine.set_state(0, serialise(state))  # white-box: move the agent onto a key
    _, reward, term, trunc, infos = env.step([4])
    episode = infos[0]["episode"]
    assert trunc[0] and not term[0] and reward[0] == 0
    assert episode["length"] == 1000 and not episode["success"]
    assert (episode["keys_collected"], episode["keys_total"]) == (1, 2)
    assert (episode["doors_opened"], episode["doors_total"]) == (0, 2)
    env.close()


def test_no_step_changes_keys_or_doors_out_of_reach():
    """The replay shortcut's premise, checked on random play: every action, one step."""
    engine, scratch = Engine(8, "easy", seed=9), Engine(1, "easy", seed=0, num_threads=0)
    rng = np.random.default_rng(9)
    far = near = 0
    for _ in range(40):
        engine.act(rng.integers(0, 15, engine.num))
        for i in range(0, engine.num, 2):
            data = engine.get_state(i)
            state = parse(data)
            if edits.key_or_door_within(state, REACH):
                near += 1
                continue
            far += 1
            for action in range(15):
                scratch.set_state(0, data)
                scratch.act(np.array([action]))
                after = parse(scratch.get_state(0))
                if after.game.cur_time == state.game.cur_time + 1:  # same episode
                    assert edits.keys_on_floor(after) == edits.keys_on_floor(state)
                    assert edits.colours(after) == edits.colours(state)
    assert far > 20 and near > 0


def test_success_counts_every_key_and_door():
    env = HeistVecEnv((HeistConfig(maze_size=5, num_keys=1),), 8, seed=0)
    env.reset()
    rng = np.random.default_rng(0)
    wins = []
    for _ in range(1000):
        _, reward, term, trunc, infos = env.step(rng.integers(0, 15, env.num_envs))
        for i in np.flatnonzero(term):
            assert reward[i] == 10.0 and not trunc[i]
            wins.append(infos[i]["episode"])
        if wins:
            break
    assert wins
    for ep in wins:
        assert ep["success"] and ep["return"] == 10.0
        assert ep["keys_collected"] == ep["keys_total"] == 1
        assert ep["doors_opened"] == ep["doors_total"] == 1
    env.close()


def test_single_env_api_and_bad_input():
    env = HeistEnv(HeistConfig(maze_size=5, num_keys=0), seed=0)
    obs = env.reset()
    assert obs.shape == (64, 64, 3) and obs.dtype == np.uint8
    obs, reward, terminated, truncated, info = env.step(3)
    assert isinstance(reward, float) and isinstance(terminated, bool)
    with pytest.raises(ValueError, match="actions"):
        env.step(15)
    env.close()
    with HeistVecEnv((HeistConfig(),), 2, seed=0) as vec:
        with pytest.raises(RuntimeError, match="reset"):
            vec.step([0, 0])
        with pytest.raises(ValueError, match="configs"):
            vec.set_mixture([{"maze_size": 5}])


def test_state_snapshot_continues_every_episode_exactly():
    """A checkpoint keeps running games: a new vec env restored from `get_state` plays
    on exactly as the original (levels drawn after the snapshot included)."""
    configs = (HeistConfig(), HeistConfig(maze_size=5, keys_held=1))

    def play(env, steps, rng):
        out = []
        for _ in range(steps):
            obs, rew, term, trunc, info = env.step(rng.integers(0, 15, 4))
            out.append((obs, rew, term, trunc, info))
        return out

    env = HeistVecEnv(configs, 4, seed=11)
    env.reset()
    play(env, 40, np.random.default_rng(1))
    state = env.get_state()
    expected = play(env, 300, np.random.default_rng(2))
    assert env.set_mixture(configs[:1]) == 4
    env.close()
    restored = HeistVecEnv((HeistConfig(),), 4, seed=11)
    restored.set_state(state)
    got = play(restored, 300, np.random.default_rng(2))
    restored.close()
    assert any(step[4][i] for step in expected for i in range(4))  # episodes ended after
    for a, b in zip(expected, got, strict=True):
        assert all(np.array_equal(x, y) for x, y in zip(a[:4], b[:4], strict=True))
        assert a[4] == b[4]
