"""Cohorts (envgen.agents.cohort): a seed's numbers do not depend on its slot or its
neighbours, repeat exactly, survive kill -9 and resume, and place every tensor on the device.

Tiny IMPALA networks on the real CrafterVecEnv, 2 envs x 16 steps per seed."""

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import torch

from envgen.agents.checkpoint import load_checkpoint
from envgen.agents.cohort import CohortPPO, interleave
from envgen.agents.cohort_trainer import CohortTrainer, crafter_cohort_env_factory
from envgen.agents.config import ModelConfig, PPOConfig
from envgen.agents.networks import ActorCritic
from envgen.agents.ppo import gae
from envgen.agents.trainer import Trainer, crafter_vec_env_factory
from envgen.envs.crafter.config import CrafterConfig
from envgen.envs.vector import CrafterVecEnv
from envgen.errors import ConfigError
from envgen.store.manifest import CHECKPOINT_DIR
from tests.fake_device import DEVICE, FakeDevice, on_device

MODEL = ModelConfig(channels=(4, 8), blocks_per_stack=1, embed_size=16, hidden_size=16)
# 2 envs x 16 steps = 32 steps per rollout and seed; a checkpoint every 2 rollouts.
PPO = PPOConfig(num_envs=2, num_steps=16, minibatches=2, epochs=2, checkpoint_every=64)
WORLD = [CrafterConfig(length=20)]  # short episodes: some finish in 128 steps
STEPS = 128


def _cohort(seeds, root: Path, **kwargs) -> CohortTrainer:
    dirs = [root / f"seed-{s}" for s in seeds]
    return CohortTrainer(
        MODEL, PPO, seeds, dirs, env_factory=crafter_cohort_env_factory(1), **kwargs
    )


def _outcome(run_dir: Path) -> tuple:
    metrics = [
        {k: v for k, v in json.loads(line).items() if not k.startswith("time/")}
        for line in (run_dir / "metrics.jsonl").read_text().splitlines()
    ]
    weights = load_checkpoint(run_dir / CHECKPOINT_DIR, torch.device("cpu"))["model"]
    return (run_dir / "episodes.jsonl").read_text(), metrics, weights


def _train(seeds, root: Path, **kwargs) -> None:
    trainer = _cohort(seeds, root, **kwargs)
    trainer.train_until(STEPS, WORLD)
    trainer.close()


def _same(a: tuple, b: tuple) -> bool:
    return (
        a[0] == b[0]
        and a[1] == b[1]
        and a[2].keys() == b[2].keys()
        and all(torch.equal(a[2][k], b[2][k]) for k in a[2])
    )


def test_a_seed_is_the_same_in_any_slot_beside_any_seeds_and_on_repeat(tmp_path):
    _train([5, 1, 2], tmp_path / "first")
    _train([10, 11, 5], tmp_path / "last")
    _train([5, 1, 2], tmp_path / "again")
    slot0 = _outcome(tmp_path / "first" / "seed-5")
    assert slot0[0].count("\n") > 0  # episodes finished, so the comparison has content
    assert _same(slot0, _outcome(tmp_path / "last" / "seed-5"))
    assert _same(slot0, _outcome(tmp_path / "again" / "seed-5"))
    # and the seeds differ from one another
    assert not _same(slot0, _outcome(tmp_path / "first" / "seed-1"))


_KILLED = textwrap.dedent(
    """
    import os, signal, sys
    from pathlib import Path
    sys.path.insert(0, {root!r})
    import torch
    torch.set_num_threads(1)  # as tests/conftest.py: the thread count is part of a run's numbers
    from tests.test_agents_cohort import _cohort, WORLD
    trainer = _cohort([3, 4], Path({run!r}))
    trainer.resume()
    wrote = trainer.checkpoint
    def checkpoint():
        wrote()
        if trainer.global_step >= 96:
            os.kill(os.getpid(), signal.SIGKILL)
    trainer.checkpoint = checkpoint
    trainer.train_until(10_000, WORLD)
    """
)


def test_a_cohort_killed_and_resumed_equals_an_uninterrupted_one(tmp_path):
    _train([3, 4], tmp_path / "full")
    run = tmp_path / "killed"
    root = str(Path(__file__).resolve().parents[1])
    script = _KILLED.format(root=root, run=str(run))
    proc = subprocess.run([sys.executable, "-c", script], timeout=300, cwd=root)
    assert proc.returncode == -signal.SIGKILL
    trainer = _cohort([3, 4], run, checkpoint_seconds=1e-9)  # every rollout checkpoints
    assert trainer.resume() and trainer.global_step == 128  # a slice every 2 rollouts
    trainer.close()
    # a kill inside the next checkpoint: seed 3's new slice written, seed 4's not yet
    (run / "seed-3" / CHECKPOINT_DIR / "previous.pt").write_bytes(
        (run / "seed-3" / CHECKPOINT_DIR / "latest.pt").read_bytes()
    )
    trainer = _cohort([3, 4], run)
    assert trainer.resume() and trainer.global_step == 128
    trainer.train_until(STEPS, WORLD)
    trainer.close()
    for seed in (3, 4):
        assert _same(_outcome(run / f"seed-{seed}"), _outcome(tmp_path / "full" / f"seed-{seed}"))


def test_a_pipelined_cohort_is_its_groups_trained_one_after_the_other(tmp_path):
    # 4 rollouts: group 0 collects ahead during rollouts 1 and 3, not before the
    # checkpoints (every 2 rollouts) nor at the end
    _train([5, 1, 2, 3], tmp_path / "pipelined", groups=2)
    _train([5, 1], tmp_path / "alone")
    _train([2, 3], tmp_path / "alone")
    for seed in (5, 1, 2, 3):
        pipelined = _outcome(tmp_path / "pipelined" / f"seed-{seed}")
        assert pipelined[0].count("\n") > 0
        assert _same(pipelined, _outcome(tmp_path / "alone" / f"seed-{seed}"))
    # a seed in the other group, in another slot, beside other seeds: the same numbers
    _train([10, 11, 12, 5], tmp_path / "moved", groups=2)
    assert _same(
        _outcome(tmp_path / "pipelined" / "seed-5"), _outcome(tmp_path / "moved" / "seed-5")
    )
    slice_ = load_checkpoint(
        tmp_path / "pipelined" / "seed-5" / CHECKPOINT_DIR, torch.device("cpu")
    )
    assert slice_["cohort"] == {"size": 4, "step": STEPS, "groups": 2}
    with pytest.raises(ConfigError, match="in 2 group"):  # resumes only with its grouping
        _cohort([5, 1, 2, 3], tmp_path / "pipelined").resume()
    with pytest.raises(ConfigError, match="groups of at least 2"):
        _cohort([5, 1, 2], tmp_path / "odd", groups=2)


_KILLED_PIPELINED = textwrap.dedent(
    """
    import os, signal, sys
    from pathlib import Path
    sys.path.insert(0, {root!r})
    import torch
    torch.set_num_threads(1)
    from tests.test_agents_cohort import _cohort, WORLD
    trainer = _cohort([3, 4, 5, 6], Path({run!r}), groups=2)
    trainer.resume()
    log = trainer.metrics_logs[-1]  # the last seed's metrics: written last in a rollout
    wrote = log.write
    def write(record):
        wrote(record)
        if record["step"] >= 96:  # group 0 has collected rollout 4 ahead; no checkpoint
            assert trainer._groups[0].ahead
            os.kill(os.getpid(), signal.SIGKILL)
    log.write = write
    trainer.train_until(10_000, WORLD)
    """
)


def test_a_pipelined_cohort_killed_mid_pipeline_and_resumed_equals_an_uninterrupted_one(
    tmp_path,
):
    _train([3, 4, 5, 6], tmp_path / "full", groups=2)
    run = tmp_path / "killed"
    root = str(Path(__file__).resolve().parents[1])
    script = _KILLED_PIPELINED.format(root=root, run=str(run))
    proc = subprocess.run([sys.executable, "-c", script], timeout=300, cwd=root)
    assert proc.returncode == -signal.SIGKILL
    trainer = _cohort([3, 4, 5, 6], run, groups=2)
    assert trainer.resume() and trainer.global_step == 64
    trainer.train_until(STEPS, WORLD)
    trainer.close()
    for seed in (3, 4, 5, 6):
        assert _same(_outcome(run / f"seed-{seed}"), _outcome(tmp_path / "full" / f"seed-{seed}"))


def test_a_slice_resumes_only_in_a_cohort_of_its_size_and_loads_into_a_network(tmp_path):
    _train([1, 2], tmp_path)
    with pytest.raises(ConfigError, match="cohort of 2"):
        _cohort([1, 2, 3], tmp_path).resume()
    alone = Trainer(MODEL, PPO, 1, tmp_path / "seed-1")
    with pytest.raises(ConfigError, match="slice of a cohort"):
        alone.resume()
    state = load_checkpoint(tmp_path / "seed-2" / CHECKPOINT_DIR, torch.device("cpu"))
    net = ActorCritic(MODEL)
    net.load_state_dict(state["model"])  # a run alone's network takes a seed's slice
    torch.optim.Adam(net.parameters()).load_state_dict(state["optimizer"])
    with pytest.raises(ValueError, match="at least 2"):
        CohortPPO(MODEL, PPO, [1], torch.device("cpu"))


def test_gae_over_every_env_at_once_is_each_env_alone_bit_for_bit():
    # a cohort runs `gae` over all its seeds' envs side by side; a run alone over its own
    rng = np.random.default_rng(0)
    t, e = 7, 5
    rewards = torch.from_numpy(rng.normal(size=(t, e)).astype(np.float32))
    values = torch.from_numpy(rng.normal(size=(t + 1, e)).astype(np.float32))
    dones = torch.from_numpy((rng.random((t, e)) < 0.3).astype(np.float32))
    together = gae(rewards, values, dones, 0.95, 0.65)
    for j in range(e):
        alone = gae(rewards[:, j : j + 1], values[:, j : j + 1], dones[:, j : j + 1], 0.95, 0.65)
        assert torch.equal(together[:, j : j + 1], alone)
    assert dones.sum() > 0 and not torch.equal(
        together, gae(rewards, values, 0 * dones, 0.95, 0.65)
    )


def _rollouts(device: torch.device, mode: FakeDevice | None = None):
    seeds = [0, 1]
    env = CrafterVecEnv(WORLD, 4, 0, num_workers=1, group_size=2)
    try:
        obs = env.reset()
        agent = CohortPPO(MODEL, PPO, seeds, device)
        gens = [mode.generator(s) if mode else torch.Generator().manual_seed(s) for s in seeds]
        rngs = [np.random.default_rng(s) for s in seeds]
        losses = []
        for _ in range(2):
            obs, _ = agent.collect(env, obs, gens)
            losses.append(agent.update(rngs))
    finally:
        env.close()
    return losses, agent


def test_the_cohort_runs_on_a_device_with_the_cpu_numbers():
    expected, _ = _rollouts(torch.device("cpu"))
    with FakeDevice() as mode:
        got, agent = _rollouts(DEVICE, mode)
        assert all(on_device(p) for p in agent.params.values())
        assert all(on_device(t) for t in (agent.buf.obs, agent.buf.values, agent.buf.actions))
    assert got == expected


def _pipelined_rollouts(device: torch.device, mode: FakeDevice | None = None):
    """Two groups of two seeds, each update interleaved with the other's collection, as
    `CohortTrainer(groups=2)` runs them."""
    groups = [[0, 1], [2, 3]]
    envs = [CrafterVecEnv(WORLD, 4, 0, num_workers=1, group_size=2) for _ in groups]
    try:
        obs = [env.reset() for env in envs]
        agents = [CohortPPO(MODEL, PPO, g, device, side_stream=True) for g in groups]
        gens = [
            [mode.generator(s) if mode else torch.Generator().manual_seed(s) for s in g]
            for g in groups
        ]
        rngs = [[np.random.default_rng(s) for s in g] for g in groups]
        losses = []
        obs[0], _ = agents[0].collect(envs[0], obs[0], gens[0])
        for a, b in ((0, 1), (1, 0), (0, 1)):
            update = agents[a].update_steps(rngs[a])
            collect = agents[b].collect_steps(envs[b], obs[b], gens[b])
            result, (obs[b], _) = interleave(update, collect, PPO)
            losses.append(result)
        losses.append(agents[1].update(rngs[1]))
    finally:
        for env in envs:
            env.close()
    return losses, agents


def test_the_pipelined_groups_run_on_a_device_with_the_cpu_numbers():
    expected, _ = _pipelined_rollouts(torch.device("cpu"))
    with FakeDevice() as mode:
        got, agents = _pipelined_rollouts(DEVICE, mode)
        assert all(on_device(p) for agent in agents for p in agent.params.values())
    assert got == expected


def test_vec_env_groups_take_their_own_seeds_and_mixture():
    seeds = [11, 12, 13, 14]
    configs = [CrafterConfig(length=20), CrafterConfig(target_biome="mountain", length=12)]
    with CrafterVecEnv(configs, 4, 0, num_workers=2, env_seeds=seeds, group_size=2) as env:
        assert env.config_indices == [0, 1, 0, 1]
        both = env.reset()
    with CrafterVecEnv(configs, 2, 0, num_workers=1, env_seeds=seeds[2:], group_size=2) as env:
        assert np.array_equal(env.reset(), both[2:])
    if os.name == "posix":
        with pytest.raises(ValueError, match="group_size"):
            CrafterVecEnv(configs, 4, 0, num_workers=1, group_size=3)


def _cli_json(args: list[str]) -> dict:
    return _cli_json_lines(args)[-1]


def _cli_json_lines(args: list[str]) -> list[dict]:
    """Every JSON line the command prints, in order."""
    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "ENVGEN_ENV_WORKERS": "1"}
    out = subprocess.run(
        [sys.executable, "-m", "envgen.cli", *args],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=root,
        env=env,
        check=True,
    )
    lines = out.stdout.strip().splitlines()
    assert lines[-1].startswith("{")  # the last line is JSON
    return [json.loads(line) for line in lines if line.startswith("{")]


def test_the_cohort_bench_and_the_precision_ab_run_tiny_on_the_cpu(tmp_path):
    tiny = ["--model", "nature", "--num-envs", "2", "--num-steps", "32", "--minibatches", "2"]
    so_far = _cli_json_lines(
        [
            "bench",
            "train",
            *tiny,
            "--rollouts",
            "1",
            "--no-reference",
            "--cohort",
            "2,4",
            "--cohort-groups",
            "1,2",
        ]
    )
    bench = so_far[-1]
    # the result so far after each cohort (a later failure loses no rate), then the whole
    assert [len(line["cohorts"]) for line in so_far] == [1, 2, 3, 3]
    assert all(line["cohorts"] == bench["cohorts"][: len(line["cohorts"])] for line in so_far)
    assert so_far[0]["cohort_sps"] == so_far[0]["cohorts"][0]["cohort_sps"]
    # each cohort names its vec env's workers ($ENVGEN_ENV_WORKERS 1 here): gpu probe
    # params writes the count its rate was measured with
    assert [c["env_workers"] for c in bench["cohorts"]] == [1, 1, 1]
    assert bench["mode"] == "float32" and bench["baseline_runs"] == 1
    assert bench["ratio"] == pytest.approx(bench["cohort_sps"] / bench["baseline_sps"], rel=0.01)
    # a cohort of 2 has no 2 groups of at least 2 seeds: skipped
    entries = {(c["cohort"], c["groups"]): c for c in bench["cohorts"]}
    assert sorted(entries) == [(2, 1), (4, 1), (4, 2)]
    assert (bench["cohort"], bench["cohort_groups"]) in entries
    pipelined = entries[4, 2]
    assert pipelined["collect_sps"] is None and pipelined["update_sps"] is None
    assert len(pipelined["rollout_s"]) == 1 and pipelined["cohort_sps"] > 0
    assert entries[2, 1]["collect_sps"] > 0
    ab = _cli_json(
        [
            "bench",
            "precision",
            "--device",
            "cpu",
            *tiny,
            "--modes",
            "float32,tf32",
            "--seeds",
            "1,2",
            "--steps",
            "1024",
            "--out",
            str(tmp_path),
        ]
    )
    # on the CPU the modes are one computation: the same returns, seed by seed
    arms = ab["arms"]
    assert arms["float32"]["per_seed"] == arms["tf32"]["per_seed"]
    assert ab["tf32_vs_float32"]["difference"] == 0.0


def test_a_cohort_seed_trains_as_that_seed_alone_up_to_its_policy_steps_rounding(tmp_path):
    # One PPO for one seed and many: the same per-seed loss (`ppo.ppo_loss`), GAE
    # (`ppo.gae`), normaliser math, advantage normalisation, initial weights, env seeds,
    # action and minibatch generators. Not bit for bit: the cohort's policy step runs the
    # W networks as one vmapped network (grouped convolutions), whose float32 rounding of
    # the log-probabilities and values differs from one network's in the last bits; the
    # update's ratios then differ from a run alone's by about 1e-7, which the policy loss
    # (a mean of nearly cancelling terms) shows at up to about 1e-3 of its size. So: the
    # same episodes over 4 rollouts, and every logged loss within 1e-6 + 1e-3 |loss|.
    _train([5, 1], tmp_path / "cohort")
    alone = Trainer(MODEL, PPO, 5, tmp_path / "alone", env_factory=crafter_vec_env_factory(1))
    alone.train_until(STEPS, WORLD)
    alone.close()
    cohort, single = _outcome(tmp_path / "cohort" / "seed-5"), _outcome(tmp_path / "alone")
    assert cohort[0] == single[0] and cohort[0].count("\n") > 0
    assert len(cohort[1]) == len(single[1]) == STEPS // PPO.rollout_size
    for got, expected in zip(cohort[1], single[1], strict=True):
        assert got.keys() == expected.keys()
        for key, value in expected.items():
            if key.startswith("losses/"):
                assert got[key] == pytest.approx(value, rel=1e-3, abs=1e-6), key
            else:  # step, phase, episodes
                assert got[key] == value, key
    # the tolerance is not loose enough to hide another seed's numbers
    other = _outcome(tmp_path / "cohort" / "seed-1")[1]
    assert any(
        o[k] != pytest.approx(s[k], rel=1e-3, abs=1e-6)
        for o, s in zip(other, single[1], strict=True)
        for k in s
        if k.startswith("losses/")
    )
