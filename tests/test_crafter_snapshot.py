"""A running CrafterEnv as plain data: `restore(capture(env))` plays on exactly as `env`."""

from __future__ import annotations

import numpy as np
import pytest

from envgen.envs.crafter import snapshot
from envgen.envs.crafter.config import CrafterConfig
from envgen.envs.crafter.env import CrafterEnv


def _play(env: CrafterEnv, rng: np.random.Generator, steps: int) -> list:
    trace = []
    for _ in range(steps):
        obs, reward, terminated, truncated, info = env.step(int(rng.integers(17)))
        trace.append((obs.tobytes(), reward, terminated, truncated, info["achievements"]))
        if terminated or truncated:
            obs, _ = env.reset()
            trace.append(obs.tobytes())
    return trace


@pytest.mark.parametrize("world_rules", ["stock", "authors"])
def test_restored_env_continues_exactly(world_rules):
    config = CrafterConfig(length=200, inventory=(("wood", 3),), world_rules=world_rules)
    env = CrafterEnv(config, seed=11)
    env.reset()
    rng = np.random.default_rng(0)
    _play(env, rng, 450)  # night, creatures spawned and removed, one episode ended
    data = snapshot.capture(env)
    state = rng.bit_generator.state
    expected = _play(env, rng, 700)
    rng.bit_generator.state = state
    assert _play(snapshot.restore(data), rng, 700) == expected


def test_snapshot_is_plain_data():
    env = CrafterEnv(CrafterConfig(), seed=1)
    env.reset()
    _play(env, np.random.default_rng(1), 50)

    def walk(value):
        if isinstance(value, dict):
            for k, v in value.items():
                assert type(k) in (str, int)
                walk(v)
        elif isinstance(value, list | tuple):
            for v in value:
                walk(v)
        elif isinstance(value, np.ndarray):
            assert value.dtype.kind in "biuf"
        else:
            assert value is None or type(value) in (bool, int, float, str), type(value)

    walk(snapshot.capture(env))


@pytest.mark.parametrize(
    "damage",
    [
        lambda d: d["world"]["objects"][1].update({"class": "os.system"}),
        lambda d: d["world"]["objects"][1]["attrs"].update({"pos": {"ref": 10**6}}),
        lambda d: d["world"].update({"obj_map": d["world"]["obj_map"].astype(np.int64)}),
        lambda d: d["world"]["objects"][1]["attrs"].update({"facing": {"eval": "1"}}),
        lambda d: d.update({"config": {"kind": "crafter", "length": "x"}}),
        lambda d: d["world"]["objects"][1]["attrs"].update({"update": 1}),  # shadows a method
        lambda d: d["world"]["objects"][1]["attrs"].update({"pos": {"vec": [0, 0]}}),
        lambda d: d["world"]["objects"][1]["attrs"]["inventory"]["dict"].append(["wood", 2**70]),
        lambda d: d.update({"length": 0}),
    ],
)
def test_malformed_snapshot_is_refused(damage):
    env = CrafterEnv(CrafterConfig(), seed=1)
    env.reset()
    data = snapshot.capture(env)
    damage(data)
    with pytest.raises((ValueError, TypeError, KeyError)):
        snapshot.restore(data)


def test_every_object_kind_round_trips():
    """Creatures, arrows and saplings of many episodes: each snapshot restores (restore
    checks every attribute against `snapshot.ATTRIBUTES`) and plays on alike."""
    env = CrafterEnv(CrafterConfig(length=300), seed=3)
    env.reset()
    rng = np.random.default_rng(0)
    seen = set()
    for _ in range(20):
        _play(env, rng, 150)
        seen |= {type(obj).__name__ for obj in env._world._objects if obj is not None}
        data = snapshot.capture(env)
        state = rng.bit_generator.state
        expected = _play(env, rng, 20)
        rng.bit_generator.state = state
        assert _play(snapshot.restore(data), rng, 20) == expected
    assert seen >= {"Player", "Cow", "Zombie", "Skeleton", "Arrow", "Plant"}, seen


def test_a_sleeping_players_half_step_counters_round_trip():
    """Asleep without food, the game moves `_recover` by -0.5 (stock crafter's
    `Player._recover_health`) and hunger and thirst by 0.5: a snapshot taken then restores
    and plays on alike (a handoff's checkpoint once held such a player)."""
    env = CrafterEnv(CrafterConfig(length=300), seed=5)
    env.reset()
    player = env._player
    player.sleeping, player.inventory["food"], player.inventory["energy"] = True, 0, 0
    env.step(0)  # noop, asleep and hungry
    assert type(player._recover) is float and player._recover % 1 == 0.5, player._recover
    data = snapshot.capture(env)
    rng = np.random.default_rng(2)
    state = rng.bit_generator.state
    expected = _play(env, rng, 40)
    rng.bit_generator.state = state
    assert _play(snapshot.restore(data), rng, 40) == expected


def test_snapshots_through_a_sleepy_random_play_all_restore():
    """Every 50 steps of 3,000, a third of the actions sleep: each snapshot restores
    (restore checks every attribute's type against what the game writes)."""
    env = CrafterEnv(CrafterConfig(length=3000, world_rules="authors"), seed=2)
    env.reset()
    rng = np.random.default_rng(2)
    for t in range(3000):
        action = 6 if rng.random() < 0.3 else int(rng.integers(17))  # 6: sleep
        *_, terminated, truncated, _ = env.step(action)
        if terminated or truncated:
            env.reset()
        if t % 50 == 0:
            snapshot.restore(snapshot.capture(env))
