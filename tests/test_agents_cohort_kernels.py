"""The cohort's update as fixed-address minibatches (`envgen.agents.cohort`, kernel modes
eager, graph and compile) and its collection's host traffic, on the CPU.

What a GPU adds (capture and replay) is checked on the device by results/gpu/next/; here:
the restructured update computes the replaced loop's weights bit for bit, a minibatch
never waits for the device, "compile" is one graph for every seed, idle-time world
generation changes no number, and (with `FakeCuda` standing in for the graph calls) each
capture has its own stream and cuBLAS workspace, a failed capture or compilation raises
outside "eager" and leaves the caller's stream current, and `close` frees the graphs.
Tiny IMPALA networks on the real CrafterVecEnv."""

import contextlib
import importlib.util
import subprocess
from pathlib import Path

import numpy as np
import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from envgen.agents import cohort as cohort_module
from envgen.agents import graphs
from envgen.agents.cohort import CohortPPO
from envgen.agents.cohort_trainer import CohortTrainer, crafter_cohort_env_factory
from envgen.agents.config import ModelConfig, PPOConfig
from envgen.agents.ppo import gae
from envgen.envs.crafter.config import CrafterConfig
from envgen.envs.vector import CrafterVecEnv, _Block
from envgen.errors import ConfigError
from envgen.loop.config import RunConfig
from tests.fake_device import DEVICE, FakeCuda, FakeDevice

MODEL = ModelConfig(channels=(4, 8), blocks_per_stack=1, embed_size=16, hidden_size=16)
PPO = PPOConfig(num_envs=2, num_steps=16, minibatches=2, epochs=2, checkpoint_every=64)
WORLD = [CrafterConfig(length=20)]  # short episodes: resets within a few rollouts
REPO = Path(__file__).resolve().parents[1]
# The last commit whose cohort update was the eager loop the fixed-address update replaced.
BEFORE = "7a3c9cd"


def _module_before():
    """envgen/agents/cohort.py as it was at BEFORE, loaded from git history, with its GAE
    replaced by today's shared `envgen.agents.ppo.gae` (a run alone's, to which the cohort
    moved on purpose: its own NumPy GAE rounded gamma * lambda in float32)."""
    try:
        source = subprocess.run(
            ["git", "show", f"{BEFORE}:envgen/agents/cohort.py"],
            cwd=REPO,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip(f"not a git checkout with commit {BEFORE}")
    spec = importlib.util.spec_from_loader("cohort_before", loader=None)
    module = importlib.util.module_from_spec(spec)
    exec(compile(source, f"{BEFORE}:envgen/agents/cohort.py", "exec"), module.__dict__)
    module.gae_numpy = lambda rewards, values, dones, gamma, lam: gae(
        torch.from_numpy(rewards), torch.from_numpy(values), torch.from_numpy(dones), gamma, lam
    ).numpy()
    return module


def _same_losses(got: list, expected: list) -> bool:
    """The logged losses: the replaced loop averaged each seed's minibatch statistics in
    float32 on the device, today's update in float64 over their values as `ppo_update`
    does, so the means agree to float32's precision, not in every bit."""
    return all(
        g.keys() == e.keys() and all(g[k] == pytest.approx(e[k], rel=1e-4, abs=1e-7) for k in g)
        for got_update, expected_update in zip(got, expected, strict=True)
        for g, e in zip(got_update, expected_update, strict=True)
    )


def _train(module, seeds, **kwargs):
    """Three rollouts and updates of a cohort of `seeds`: every loss and the parameters."""
    env = CrafterVecEnv(WORLD, 2 * len(seeds), 0, num_workers=1, group_size=2)
    try:
        obs = env.reset()
        agent = module.CohortPPO(MODEL, PPO, seeds, torch.device("cpu"), **kwargs)
        gens = [torch.Generator().manual_seed(s) for s in seeds]
        rngs = [np.random.default_rng(s) for s in seeds]
        losses = []
        for _ in range(3):
            obs, _ = agent.collect(env, obs, gens)
            losses.append(agent.update(rngs))
    finally:
        env.close()
    return losses, {k: v.detach().clone() for k, v in agent.params.items()}


def _pipelined(module):
    """Two groups of two seeds, each update interleaved with the other's collection."""
    groups = [[0, 1], [2, 3]]
    envs = [CrafterVecEnv(WORLD, 4, 0, num_workers=1, group_size=2) for _ in groups]
    try:
        obs = [env.reset() for env in envs]
        agents = [module.CohortPPO(MODEL, PPO, g, torch.device("cpu")) for g in groups]
        gens = [[torch.Generator().manual_seed(s) for s in g] for g in groups]
        rngs = [[np.random.default_rng(s) for s in g] for g in groups]
        losses = []
        obs[0], _ = agents[0].collect(envs[0], obs[0], gens[0])
        for a, b in ((0, 1), (1, 0), (0, 1)):
            update = agents[a].update_steps(rngs[a])
            collect = agents[b].collect_steps(envs[b], obs[b], gens[b])
            result, (obs[b], _) = module.interleave(update, collect, PPO)
            losses.append(result)
    finally:
        for env in envs:
            env.close()
    return losses, [{k: v.detach().clone() for k, v in a.params.items()} for a in agents]


def _same_params(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


@pytest.mark.parametrize("size", [2, 3])
def test_the_fixed_address_update_is_the_eager_loop_it_replaced_bit_for_bit(size):
    before = _module_before()
    seeds = [5, 1, 2][:size]
    expected, params = _train(before, seeds)
    for kernels in ("eager", "graph"):  # off CUDA, "graph" runs the same minibatch uncaptured
        got, got_params = _train(cohort_module, seeds, kernels=kernels)
        assert _same_params(got_params, params), kernels  # every weight, bit for bit
        assert _same_losses(got, expected), kernels


def test_the_pipelined_update_is_the_one_it_replaced_bit_for_bit():
    before = _module_before()
    expected, params = _pipelined(before)
    got, got_params = _pipelined(cohort_module)
    assert _same_losses(got, expected)
    assert all(_same_params(a, b) for a, b in zip(got_params, params, strict=True))


def test_a_minibatch_never_waits_for_the_device_and_a_collect_step_once():
    with FakeDevice() as mode:
        seeds = [0, 1]
        env = CrafterVecEnv(WORLD, 4, 0, num_workers=1, group_size=2)
        try:
            agent = CohortPPO(MODEL, PPO, seeds, DEVICE)
            gens = [mode.generator(s) for s in seeds]
            before = mode.host_syncs
            agent.collect(env, env.reset(), gens)
            assert mode.host_syncs - before == PPO.num_steps  # each step's actions, only
            per_minibatch = []
            run = agent._run_minibatch

            def counted() -> None:
                start = mode.host_syncs
                run()
                per_minibatch.append(mode.host_syncs - start)

            agent._run_minibatch = counted
            before = mode.host_syncs
            agent.update([np.random.default_rng(s) for s in seeds])
        finally:
            env.close()
    assert per_minibatch == [0] * (PPO.epochs * PPO.minibatches)
    assert mode.host_syncs - before == 2  # the values for GAE, the mean losses


class _CountOps(TorchDispatchMode):
    def __init__(self) -> None:
        super().__init__()
        self.count = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.count += 1
        return func(*args, **(kwargs or {}))


# A regression guard, not a target: aten ops of one eager minibatch of a cohort of 2 tiny
# networks, measured with torch 2.13 on the CPU: 1,173 for the first (Adam creates its
# state) and 1,080 for every later one (997 before each seed's loss became a run alone's
# `ppo_loss`, called once per seed). A change that adds ops to every minibatch fails here
# first; raise the ceiling only with the reason in the commit.
MINIBATCH_OPS_CEILING = 1_130


def test_an_eager_minibatch_stays_under_its_op_ceiling():
    seeds = [0, 1]
    env = CrafterVecEnv(WORLD, 4, 0, num_workers=1, group_size=2)
    try:
        agent = CohortPPO(MODEL, PPO, seeds, torch.device("cpu"))
        agent.collect(env, env.reset(), [torch.Generator().manual_seed(s) for s in seeds])
    finally:
        env.close()
    counts = []
    run = agent._run_minibatch

    def counted() -> None:
        with _CountOps() as ops:
            run()
        counts.append(ops.count)

    agent._run_minibatch = counted
    agent.update([np.random.default_rng(s) for s in seeds])
    assert len(set(counts[1:])) == 1  # every minibatch after Adam's first step alike
    assert max(counts[1:]) <= MINIBATCH_OPS_CEILING, counts


def test_compile_is_one_graph_for_every_seed_with_no_break_and_the_eager_numbers():
    from torch._dynamo.backends.debugging import aot_eager

    torch._dynamo.reset()
    graphs = []

    def counting(gm, example_inputs):
        graphs.append(gm)
        return aot_eager(gm, example_inputs)

    expected, params = _train(cohort_module, [5, 1, 2])
    # fullgraph=True: a graph break raises instead of splitting the function
    got, got_params = _train(cohort_module, [5, 1, 2], kernels="compile", compile_backend=counting)
    assert len(graphs) == 1  # one graph for the three seeds and all 24 minibatches
    assert got == expected  # aot_eager runs the traced ops with eager kernels
    assert _same_params(got_params, params)


def _block(prepare: bool):
    import multiprocessing as mp

    from envgen.envs.vector import OBS_SHAPE

    n = 3
    shared = (
        mp.RawArray("B", n * int(np.prod(OBS_SHAPE))),
        mp.RawArray("q", n),
        mp.RawArray("f", n),
        mp.RawArray("b", 2 * n),
        n,
    )
    return _Block(slice(0, n), [7, 8, 9], shared, WORLD, [0, 0, 0], [], prepare)


def test_idle_time_world_generation_changes_no_number():
    eager, plain = _block(True), _block(False)
    for block in (eager, plain):
        block.handle("reset", None)
    rng = np.random.default_rng(0)
    prepared = 0
    for _ in range(120):  # episodes of 20 steps: every env resets 6 times
        actions = rng.integers(0, 17, size=3)
        outs = []
        for block in (eager, plain):
            block.actions[:] = actions
            outs.append((block.step(), block.obs.copy(), block.rewards.copy(), block.flags.copy()))
        assert outs[0][0] == outs[1][0]
        for a, b in zip(outs[0][1:], outs[1][1:], strict=True):
            assert np.array_equal(a, b)
        eager.use_idle_time([])
        plain.use_idle_time([])  # no other block busy: the plain block prepares nothing
        prepared += sum(env.next_world_ready for env in eager.envs.values())
        assert not any(env.next_world_ready for env in plain.envs.values())
    assert prepared > 0  # the idle calls did generate worlds ahead


def test_workers_that_prepare_worlds_when_idle_step_as_one_worker():
    rng = np.random.default_rng(1)
    with (
        CrafterVecEnv(WORLD, 4, 3, num_workers=2, prepare_when_idle=True) as two,
        CrafterVecEnv(WORLD, 4, 3, num_workers=1) as one,
    ):
        assert np.array_equal(two.reset(), one.reset())
        for _ in range(100):
            actions = rng.integers(0, 17, size=4)
            a, b = two.step(actions), one.step(actions)
            for x, y in zip(a[:4], b[:4], strict=True):
                assert np.array_equal(x, y)
            assert a[4] == b[4]


def test_the_kernel_mode_is_in_the_identity_and_a_slice_resumes_only_in_its_own(tmp_path):
    base = RunConfig(method="original_only", cohort=2)
    assert "cohort_kernels" not in base.to_dict()  # eager: committed hashes unchanged
    graph = base.replace(cohort_kernels="graph")
    assert graph.config_hash() != base.config_hash()
    with pytest.raises(ConfigError, match="cohort_kernels"):
        RunConfig(method="original_only", cohort_kernels="graph")  # not a cohort
    with pytest.raises(ConfigError, match="cohort_kernels"):
        base.replace(cohort_kernels="fast")
    dirs = [tmp_path / "a", tmp_path / "b"]
    trainer = CohortTrainer(
        MODEL, PPO, [0, 1], dirs, env_factory=crafter_cohort_env_factory(1), kernels="graph"
    )
    trainer.checkpoint()
    trainer.close()
    eager = CohortTrainer(MODEL, PPO, [0, 1], dirs, env_factory=crafter_cohort_env_factory(1))
    with pytest.raises(ConfigError, match="'graph' kernels"):
        eager.resume()
    eager.close()


@contextlib.contextmanager
def _captured_cohort(monkeypatch, cuda: FakeCuda, kernels: str, fake_device=True, **kwargs):
    """(cohort of 2 whose capture calls go to `cuda`, a step function): `step("collect")`
    collects a rollout, `step("update")` updates on it. On the fake device, or with
    `fake_device` False on the CPU (torch.compile refuses the fake's dispatch mode)."""
    monkeypatch.setattr(graphs, "backend", lambda device: cuda)
    with FakeDevice() if fake_device else contextlib.nullcontext() as mode:
        env = CrafterVecEnv(WORLD, 4, 0, num_workers=1, group_size=2)
        try:
            device = DEVICE if fake_device else torch.device("cpu")
            agent = CohortPPO(MODEL, PPO, [0, 1], device, kernels=kernels, **kwargs)
            gens = [mode.generator(s) if mode else torch.Generator().manual_seed(s) for s in (0, 1)]
            rngs = [np.random.default_rng(s) for s in (0, 1)]
            obs = [env.reset()]

            def step(what: str) -> None:
                if what == "collect":
                    obs[0], _ = agent.collect(env, obs[0], gens)
                else:
                    agent.update(rngs)

            yield agent, step
        finally:
            env.close()


def test_each_capture_has_its_own_stream_and_fresh_cublas_workspaces_and_close_frees_them(
    monkeypatch,
):
    cuda = FakeCuda()
    with _captured_cohort(monkeypatch, cuda, "graph") as (agent, step):
        step("collect")  # the policy graph
        step("update")  # the update graph
    # cuBLAS's workspaces cleared around each capture: none is shared by the two graphs
    assert cuda.events == ["clear", "begin", "end", "clear"] * 2
    streams = [agent._graph.stream, agent._update_graph.stream]
    assert len({id(s) for s in streams}) == 2 and cuda.default not in streams
    assert cuda.current is cuda.default
    assert agent.update_captured
    assert cuda.replays == PPO.num_steps + 1 + PPO.epochs * PPO.minibatches
    agent.close()  # the graphs freed now, not at a later garbage collection
    assert cuda.events[-2:] == ["reset", "reset"]
    assert agent._graph is None and not agent.update_captured
    agent.close()  # idempotent
    assert cuda.events.count("reset") == 2


def test_a_failed_policy_capture_raises_outside_eager_and_leaves_the_callers_stream(
    monkeypatch,
):
    for kernels in ("graph", "eager"):
        cuda = FakeCuda(fail_end=(1,))  # the first capture: the policy step's
        with _captured_cohort(monkeypatch, cuda, kernels) as (agent, step):
            if kernels == "graph":
                with pytest.raises(ConfigError, match="'graph' kernels.*cohort_kernels eager"):
                    step("collect")
            else:  # eager kernels step op by op, as they always did
                with pytest.warns(UserWarning, match="runs eagerly"):
                    step("collect")
                assert agent._graph is False
        assert cuda.current is cuda.default, kernels  # not left on the capture stream
        assert cuda.events == ["clear", "begin", "end", "reset", "clear"], kernels


def test_a_failed_update_capture_raises_and_restores_the_model(monkeypatch):
    cuda = FakeCuda(fail_end=(2,))  # the second capture: the update's
    with _captured_cohort(monkeypatch, cuda, "graph") as (agent, step):
        step("collect")
        before = {k: v.detach().clone() for k, v in agent.params.items()}
        with pytest.raises(ConfigError, match="'graph' kernels: the cohort's update's capture"):
            step("update")
        # the warm-up's and the captured minibatch's steps undone
        assert all(torch.equal(agent.params[k].elem, v.elem) for k, v in before.items())
    assert cuda.current is cuda.default
    assert cuda.events[4:] == ["clear", "begin", "end", "reset", "clear"]
    assert not agent.update_captured


def test_a_failed_compilation_raises_once_and_never_runs_uncaptured(monkeypatch):
    torch._dynamo.reset()
    calls = []

    def failing(gm, example_inputs):
        calls.append(gm)
        raise RuntimeError("inductor: no C compiler")

    cuda = FakeCuda()
    try:
        with _captured_cohort(
            monkeypatch, cuda, "compile", fake_device=False, compile_backend=failing
        ) as (_, step):
            step("collect")
            with pytest.raises(ConfigError, match="'compile' kernels.*compilation.*eager"):
                step("update")
    finally:
        torch._dynamo.reset()
    assert len(calls) == 1  # not compiled again to run the minibatch uncaptured
    assert cuda.current is cuda.default
    assert cuda.captures == 1  # the policy step's; the update's never began
