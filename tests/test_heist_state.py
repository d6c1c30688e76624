"""procgen Heist state codec: byte-exact round trips, and edits the engine accepts."""

import numpy as np
import pytest

from envgen.envs.heist import edits
from envgen.envs.heist.engine import NUM_ACTIONS, Engine
from envgen.envs.heist.state import KEY, KEY_ON_RING, LOCKED_DOOR, PLAYER, parse, serialise


@pytest.mark.parametrize("mode", ["easy", "hard"])
@pytest.mark.parametrize("rand_seed", [0, 7])
def test_round_trip_is_byte_exact_along_random_play(mode, rand_seed):
    engine = Engine(16, mode, seed=rand_seed)
    rng = np.random.default_rng(rand_seed)
    checked = set()
    for step in range(120):
        if step % 30 == 0:
            for i in range(engine.num):
                data = engine.get_state(i)
                state = parse(data)
                assert serialise(state) == data
                assert state.world_dim == {"easy": 9, "hard": 13}[mode]
                assert state.grid.shape == (state.world_dim, state.world_dim)
                assert state.entities["type"][0] == PLAYER
                checked.add(state.game.current_level_seed)
        engine.act(rng.integers(0, NUM_ACTIONS, engine.num))
    assert len(checked) >= 16  # many distinct levels


def test_parse_rejects_damaged_bytes():
    data = Engine(1, "easy", seed=0).get_state(0)
    with pytest.raises(ValueError, match="trailer"):
        parse(data[:-4] + b"\0\0\0\0")
    with pytest.raises(ValueError):
        parse(data[: len(data) // 2])
    with pytest.raises(ValueError, match="not a Heist state"):
        parse(data[:8] + b"mazes" + data[13:])


def test_edited_state_is_accepted_and_the_edit_holds():
    engine = Engine(6, "easy", seed=3)
    held = []
    for i in range(engine.num):
        state = parse(engine.get_state(i))
        edits.hold_keys(state, 3)
        held.append(edits.colours(state))
        engine.set_state(i, serialise(state))
        assert parse(engine.get_state(i)) == state
    assert max(held) > 0
    rng = np.random.default_rng(0)
    playing = np.ones(engine.num, dtype=bool)  # still in the edited episode
    for _ in range(200):
        engine.act(rng.integers(0, NUM_ACTIONS, engine.num))
        playing &= ~engine.observe()[2]
        for i in np.flatnonzero(playing):
            state = parse(engine.get_state(i))
            assert state.has_keys[: held[i]] == [True] * held[i]
            assert edits.keys_on_floor(state) == 0
    assert playing.sum() >= 3


def test_keep_colours_drops_the_first_and_renumbers_the_rest():
    engine = Engine(32, "easy", seed=5)
    seen = 0
    for i in range(engine.num):
        state = parse(engine.get_state(i))
        before = edits.colours(state)
        if before < 2:
            continue
        seen += 1
        edits.keep_colours(state, before - 1)
        ents = state.entities
        for kind in (KEY, LOCKED_DOOR):
            assert sorted(ents["image_theme"][ents["type"] == kind]) == list(range(before - 1))
        assert len(state.of_type(KEY_ON_RING)) == state.num_keys == len(state.has_keys)
        engine.set_state(i, serialise(state))
        assert parse(engine.get_state(i)) == state
    assert seen > 0
