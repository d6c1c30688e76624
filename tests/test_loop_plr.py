"""The PLR-robust designer over domain randomization's worlds: its level buffer against
values jaxued's own code computed (tests/data/jaxued_plr/), the weights' limits, the
minimum fill, rescoring, seeding, the config, and a tiny real run whose rollouts count in
the step budget (docs/loop.md, "PLR-robust")."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from envgen.envs.crafter.config import CrafterConfig
from envgen.errors import ConfigError
from envgen.llm.conversation import PromptOptions
from envgen.llm.parse import settings_key
from envgen.loop.config import RunConfig
from envgen.loop.learnability import RolloutOutcome
from envgen.loop.level_buffer import (
    LevelBuffer,
    episode_time_averages,
    replay_weights,
    score_weights,
    staleness_weights,
)
from envgen.loop.level_rollout import value_loss_by_config
from envgen.loop.runner import execute_run
from envgen.loop.world_designers import PLRDesigner, PLRSettings, sample_worlds
from envgen.scoring import ACHIEVEMENTS
from tests.test_loop import TINY, TINY_PPO
from tests.test_loop_sfl import curation_metrics, worlds_of
from tests.test_loop_sfl import wood_success as wood

GOLDEN = json.loads(
    (Path(__file__).parent / "data" / "jaxued_plr" / "golden.json").read_text(encoding="utf-8")
)
OPTIONS = PromptOptions(game="crafter", initial_set=0)
K = len(ACHIEVEMENTS)
# The buffer slots seed 7 trains on in 4 cycles of the known rollout (`plr(7)`), measured
# once: beta = 0.3 puts most of the weight on the top-scored world.
PINNED_CHOSEN = [(1, 1, 1, 1), (1, 1, 11, 19), (1, 0, 22, 30), (24, 1, 1, 1)]


# --- against jaxued ------------------------------------------------------------------------
@pytest.mark.parametrize(
    "case", GOLDEN["weights"], ids=lambda c: f"b{c['temperature']}-r{c['staleness']}-n{c['size']}"
)
def test_replay_weights_are_jaxueds(case):
    ours = replay_weights(
        [-np.inf if s is None else s for s in case["scores"]],
        case["timestamps"],
        case["episode_count"],
        case["size"],
        case["temperature"],
        case["staleness"],
    )
    np.testing.assert_allclose(ours, case["weights"], rtol=1e-5, atol=1e-7)  # jax: float32


def test_inserts_fill_then_replace_the_least_weighted_as_jaxued_does():
    case = GOLDEN["insert"]
    buffer = LevelBuffer(case["capacity"], case["temperature"], case["staleness"])
    slots = [buffer.insert(i, -np.inf if s is None else s) for i, s in enumerate(case["scores"])]
    assert slots == case["slots"]
    assert buffer.levels == case["levels"]
    np.testing.assert_allclose(buffer.scores, case["final_scores"], rtol=1e-6)
    assert buffer.timestamps.tolist() == case["timestamps"]
    assert buffer.episode_count == case["episode_count"]


def positive_value_loss(advantages, dones) -> np.ndarray:
    """jaxued's score per env: the mean over its finished episodes of each episode's
    time-averaged max(advantage, 0); -inf for an env that finished none."""
    sums, counts = episode_time_averages(np.maximum(np.asarray(advantages, float), 0.0), dones)
    return np.where(counts > 0, sums / np.maximum(counts, 1), -np.inf)


def test_positive_value_loss_is_jaxueds():
    case = GOLDEN["positive_value_loss"]
    ours = positive_value_loss(case["advantages"], case["dones"])
    expected = [-np.inf if s is None else s for s in case["scores"]]
    np.testing.assert_allclose(ours, expected, rtol=1e-5)


# --- the weights' limits --------------------------------------------------------------------
@pytest.mark.parametrize("size", [1, 5, 8])
def test_weights_sum_to_one_and_are_zero_on_empty_slots(size):
    rng = np.random.default_rng(size)
    for _ in range(20):
        scores, stamps = rng.normal(size=8), rng.integers(0, 30, size=8)
        beta, rho = rng.uniform(0.05, 2), rng.uniform(0, 1)
        w = replay_weights(scores, stamps, 30, size, beta, rho)
        assert w.sum() == pytest.approx(1.0)
        assert np.all(w[size:] == 0) and np.all(w[:size] >= 0)


def test_small_beta_gives_the_argmax_and_ties_the_lower_slot():
    scores = [0.3, 1.2, -0.5, 1.2, 0.05, 9.0, 0.0]
    one_hot = pytest.approx  # (1/2)^1000 = 1e-301: zero in all but name
    assert score_weights(scores, 5, 1e-3).tolist() == one_hot([0, 1, 0, 0, 0, 0, 0], abs=1e-12)
    assert score_weights(scores, 7, 1e-3).tolist() == one_hot([0, 0, 0, 0, 0, 1, 0], abs=1e-12)
    w = replay_weights(scores, [0] * 7, 10, 5, 1e-3, 0.0)
    assert int(np.argmax(w)) == 1 and w[1] == pytest.approx(1.0)


def test_ties_rank_the_lower_slot_first():
    # 32 equal scores: a sort that is not stable would reorder the ranks of some
    w = score_weights(np.zeros(32), 32, 1.0)
    assert np.all(np.diff(w) < 0)
    w = score_weights([0.8, 0.1] * 16, 32, 1.0)
    assert np.all(np.diff(w[0::2]) < 0) and np.all(np.diff(w[1::2]) < 0)


def test_rho_one_gives_staleness_alone():
    stamps, count = [3, 17, 9, 1, 20, 0], 21
    alone = staleness_weights(stamps, count, 5)
    assert alone.tolist() == pytest.approx([18 / 55, 4 / 55, 12 / 55, 20 / 55, 1 / 55, 0])
    for scores in ([0.3, 1.2, -0.5, 1.2, 0.05, 0], [5, 4, 3, 2, 1, 0]):
        assert replay_weights(scores, stamps, count, 5, 0.3, 1.0).tolist() == pytest.approx(
            alone.tolist()
        )
    # every level fresh: uniform over the filled slots
    assert staleness_weights([7] * 6, 7, 4).tolist() == [0.25] * 4 + [0, 0]


def test_a_draw_stamps_its_slot_and_an_unscored_level_is_never_kept():
    buffer = LevelBuffer(4, 0.3, 0.5)
    assert buffer.insert("unfinished", -np.inf) == -1  # no finished episode: no score
    assert [buffer.insert(w, s) for w, s in (("a", 0.1), ("b", 0.9))] == [0, 1]
    assert buffer.episode_count == 3
    slots = buffer.sample(np.random.default_rng(0), 3)
    assert buffer.episode_count == 6 and buffer.timestamps[slots[-1]] == 6
    with pytest.raises(ValueError, match="empty"):
        LevelBuffer(4, 0.3, 0.5).sample(np.random.default_rng(0), 1)


def test_value_loss_pools_each_configs_envs_finished_episodes():
    # 2 configs x 2 envs, 4 steps; gamma = lambda = 0, so each advantage is r - v
    rewards = [np.array([1.0, 0.0, 0.0, 2.0])] * 4
    values = [np.zeros(4)] * 4
    dones = [np.array([False, False, False, False])] * 3 + [np.array([True, True, False, True])]
    loss = value_loss_by_config(rewards, values, dones, np.array([0, 0, 1, 1]), 2, 0.0, 0.0)
    # config 0: env 0's episode averages 1, env 1's 0; config 1: env 3's averages 2
    assert loss == (0.5, 2.0)
    none = value_loss_by_config(
        rewards, values, [d * False for d in dones], np.zeros(4, int), 1, 0.0, 0.0
    )
    assert none == (None,)


def test_value_loss_discounts_inside_an_episode_and_stops_at_its_end():
    # one env: an episode of 2 steps, then an unfinished one whose rewards must not leak
    rewards = [np.array([r]) for r in (1.0, 0.0, 5.0, 5.0)]
    values = [np.array([0.5])] * 4
    dones = [np.array([d]) for d in (False, True, False, False)]
    # gamma 0.5, lambda 1: A1 = 0 - 0.5 = -0.5 (its episode ends: no bootstrap),
    # A0 = 1 + 0.5 x 0.5 - 0.5 + 0.5 x A1 = 0.5; positive parts 0.5, 0 -> 0.25
    assert value_loss_by_config(rewards, values, dones, np.array([0]), 1, 0.5, 1.0) == (0.25,)


# --- the designer with a known rollout -------------------------------------------------------
def known_rollout(worlds_seen: list | None = None, drift: float = 0.0):
    """A rollout whose positive value loss is a world's starting wood / 9 (known), plus
    `drift` x cycle (a world's score changes as the policy does)."""

    def rollout(cycle: int, worlds: Sequence) -> RolloutOutcome:
        if worlds_seen is not None:
            worlds_seen.append([settings_key(w) for w in worlds])
        n = len(worlds)
        loss = tuple(wood(w) + drift * cycle for w in worlds)
        return RolloutOutcome(((0.0,) * K,) * n, (1,) * n, n, loss)

    return rollout


def settings(capacity: int = 32, min_fill: float = 0.5) -> PLRSettings:
    return PLRSettings(16, 2, 1024, capacity, 0.3, 0.3, min_fill)


def plr(
    seed: int,
    capacity: int = 32,
    min_fill: float = 0.5,
    seen: list | None = None,
    drift: float = 0.0,
):
    rollout = known_rollout(seen, drift=drift)
    return PLRDesigner(OPTIONS, seed, settings(capacity, min_fill), rollout=rollout)


def test_no_replay_before_the_minimum_fill():
    designer = plr(3, capacity=64, min_fill=0.5)  # 32 worlds needed: 16, 28, then 40
    worlds_of(designer, 4)
    assert [r.replay for r in designer.replays] == [False, False, True, True]
    # every new world is kept (its score, 0-1, beats an empty slot): 16 + 12 + 12 new, then
    # as many as the 4 worlds replayed in cycle 3 leave room for (draws may repeat a slot)
    assert designer.buffer.size == 16 + 12 + 12 + 16 - len(designer.replays[3].rescored)
    # below the fill: domain randomization's first 4 new worlds, rescored the next cycle
    for cycle, new in ((1, 16), (2, 12)):
        drawn = _configs(sample_worlds(3, 0, cycle, new))[:4]
        trained = designer.results[cycle - 1].configs
        assert [settings_key(c) for c in trained] == [settings_key(c) for c in drawn]
    assert designer.replays[1].rescored == (0, 1, 2, 3)
    assert designer.replays[2].rescored == (16, 17, 18, 19)
    # at or above it, every world trained on is a buffer slot's
    for replay, reply in zip(designer.replays[2:], designer.results[2:], strict=True):
        assert all(0 <= slot < designer.buffer.size for slot in replay.chosen)
        assert [settings_key(c) for c in reply.configs] == [
            settings_key(c) for c in _configs([designer.buffer.levels[s] for s in replay.chosen])
        ]


def test_first_cycle_plays_dr_worlds_and_later_cycles_rescore_what_they_trained():
    seen: list = []
    designer = plr(5, seen=seen)
    worlds_of(designer, 3)
    first = [settings_key(c) for c in _configs(sample_worlds(5, 0, 1, 16))]
    assert seen[0] == first  # M + N = 16 new worlds, domain randomization's
    for cycle, replay in ((2, designer.replays[1]), (3, designer.replays[2])):
        trained = list(dict.fromkeys(designer.replays[cycle - 2].chosen))
        assert replay.rescored == tuple(trained)
        new = 16 - len(trained)
        assert seen[cycle - 1][len(trained) :] == [
            settings_key(c) for c in _configs(sample_worlds(5, 0, cycle, new))
        ]


def test_rescoring_updates_exactly_the_replayed_slots_once_each():
    seen: list = []
    designer = plr(0, capacity=64, seen=seen, drift=0.01)  # no replacement in 4 cycles
    designer.generate(4)
    stats = {s: (50, 5) for s in ACHIEVEMENTS}
    repeated = False
    for _ in range(3):
        before = designer.buffer.scores.copy()
        levels = [settings_key(c) for c in _configs(designer.buffer.levels)]
        trained = designer.replays[-1].chosen
        designer.adapt(stats)
        replay = designer.replays[-1]
        assert replay.rescored == tuple(dict.fromkeys(trained))  # distinct, in draw order
        repeated |= len(replay.rescored) < len(trained)
        k = len(replay.rescored)
        assert seen[-1][:k] == [levels[slot] for slot in replay.rescored]
        after = designer.buffer.scores
        assert [after[slot] for slot in replay.rescored] == list(replay.scores[:k])
        assert [before[slot] for slot in replay.rescored] != list(replay.scores[:k])
        untouched = [i for i in range(len(levels)) if i not in replay.rescored]
        assert [after[i] for i in untouched] == [before[i] for i in untouched]
    assert repeated  # seed 0 draws a slot twice in a cycle: it is played once


def test_a_resumed_designer_rebuilds_the_same_buffer_from_the_saved_rollouts():
    designer = plr(3, drift=0.01)
    worlds = worlds_of(designer, 4)
    saved = [json.loads(json.dumps(r.outcome.to_dict())) for r in designer.replays]
    resumed = PLRDesigner(
        OPTIONS,
        3,
        settings(),
        rollout=lambda cycle, worlds: RolloutOutcome.from_dict(saved[cycle - 1]),
    )
    assert worlds_of(resumed, 4) == worlds
    assert resumed.buffer.state() == designer.buffer.state()
    assert [r.chosen for r in resumed.replays] == [r.chosen for r in designer.replays]


def test_replay_favours_high_scores_and_same_seed_same_worlds():
    assert worlds_of(plr(7), 4) == worlds_of(plr(7), 4)
    designer = plr(7)
    worlds_of(designer, 4)
    # pinned: the draws of seed 7 (a replay seed that ignored the cycle would repeat them)
    assert [r.chosen for r in designer.replays] == PINNED_CHOSEN
    trained, offered = [], []
    for seed in range(10):
        designer = plr(seed)
        worlds_of(designer, 4)
        for reply, replay in zip(designer.results, designer.replays, strict=True):
            assert replay.replay  # 16 new worlds fill half of 32 at once
            trained += [wood(c) for c in reply.configs]
        offered += [wood(c) for c in _configs(sample_worlds(seed, 0, 1, 16))]
    # measured: trained worlds average 0.80 of the wood scale, offered ones 0.44 (0.5 expected)
    assert np.mean(trained) > 0.7 > 0.55 > np.mean(offered), (np.mean(trained), np.mean(offered))


def test_designer_without_a_value_loss_rollout_says_so():
    designer = PLRDesigner(
        OPTIONS,
        0,
        settings(),
        rollout=lambda cycle, worlds: RolloutOutcome(((0.0,) * K,) * 16, (1,) * 16, 16),
    )
    with pytest.raises(RuntimeError, match="value loss"):
        designer.generate(4)


def _configs(worlds: list[dict]) -> list[CrafterConfig]:
    return [CrafterConfig.from_dict(w) for w in worlds]


# --- the config --------------------------------------------------------------------------
def test_plr_fields_stay_out_of_other_designers_hashes_and_are_checked():
    assert "plr_capacity" not in RunConfig(designer="sfl").to_dict()
    assert "plr_capacity" in RunConfig(designer="plr").to_dict()
    # the hashes of every other designer's default config, as before plr existed
    hashes = {d: RunConfig(designer=d).config_hash() for d in ("llm", "random", "heuristic", "sfl")}
    assert hashes == {
        "llm": "4ea39fee41fc",
        "random": "1ddaa028ceab",
        "heuristic": "c5db27e4ec15",
        "sfl": "a3cca6980250",
    }
    with pytest.raises(ConfigError, match="designer: plr only"):
        RunConfig(designer="sfl", plr_capacity=64)
    with pytest.raises(ConfigError, match="method envgen"):
        RunConfig(designer="plr", method="fixed")
    with pytest.raises(ConfigError, match="sample at least 8"):
        RunConfig(designer="plr", plr_candidates=7)
    with pytest.raises(ConfigError, match="leaving none to train"):
        RunConfig(designer="plr", llm_env_steps=32_768)
    for name, value in (("plr_temperature", 0.0), ("plr_staleness", 1.5), ("plr_min_fill", 0.0)):
        with pytest.raises(ConfigError, match=name):
            RunConfig(designer="plr", **{name: value})


def test_plr_curation_costs_what_sfls_does():
    plr_config, sfl_config = RunConfig(designer="plr"), RunConfig(designer="sfl")
    assert plr_config.curation_steps_per_cycle == 16 * 2 * 1024
    assert plr_config.curation_steps == sfl_config.curation_steps == 131_072


# --- a tiny real run ---------------------------------------------------------------------
PLR_TINY = TINY.replace(
    designer="plr",
    n_cycles=2,
    llm_env_steps=3072,  # 2,560 of rollouts + 512 of training in the chosen worlds
    plr_candidates=10,
    plr_rollout_envs=1,
    plr_rollout_steps=256,
    plr_capacity=8,
    ppo=tuple(sorted({**TINY_PPO, "epochs": 1}.items())),
)


@pytest.mark.slow
def test_tiny_plr_run_counts_its_rollouts_and_records_its_buffer(tmp_path: Path):
    root = execute_run(PLR_TINY, 0, tmp_path, llm=None)
    per_cycle = 10 * 1 * 256
    curation_metrics(root, 2, per_cycle)
    records = []
    for cycle in (1, 2):
        cycle_dir = root / "cycles" / f"cycle-{cycle:02d}"
        rollouts = json.loads((cycle_dir / "plr_rollouts.json").read_text())
        assert rollouts["env_steps"] == per_cycle and len(rollouts["value_loss"]) == 10
        records.append(json.loads((cycle_dir / "environments.json").read_text())["plr"])
        assert len(records[-1]["chosen"]) == 4
    assert records[0]["replay"]  # 10 new worlds fill more than half of 8
    assert records[1]["rescored"] == sorted(
        set(records[0]["chosen"]), key=records[0]["chosen"].index
    )
    assert any(v is not None and v > 0 for v in records[0]["scores"])
