"""The agents on an accelerator, proven on the CPU.

PPO's and AD's rollouts and updates (AD's auxiliary phase included) run with every tensor
of the agent on a fake device that raises on any op mixing host and device tensors, on a
host index into a device tensor, and on a host generator drawing device numbers
(tests/fake_device.py). The fake device computes on the CPU underneath, so its losses must
equal a CPU run's exactly: device placement changes no number.
"""

import numpy as np
import pytest
import torch

from envgen.agents import ad, ppo
from envgen.agents.config import ADConfig, PPOConfig, model_preset
from envgen.envs.crafter.config import CrafterConfig
from envgen.envs.vector import CrafterVecEnv
from tests.fake_device import DEVICE, FakeDevice, on_device

PPO_CFG = PPOConfig(num_envs=2, num_steps=32, minibatches=2)
# The auxiliary phase after every 2nd rollout, 1 epoch: rollouts 2 and 4 run it.
AD_CFG = ADConfig(aux_every=2, aux_epochs=1)
# Short episodes with wood at hand (place_table), so that the aux buffer holds goals.
WORLD = [CrafterConfig(length=20, inventory=(("wood", 5), ("sapling", 1)))]
ROLLOUTS = 4


def _train(agent_name: str, device: torch.device, mode: FakeDevice | None = None):
    """`ROLLOUTS` rollouts and updates of a fresh agent; returns (losses, agent)."""
    env = CrafterVecEnv(WORLD, PPO_CFG.num_envs, 0, num_workers=1)
    try:
        obs = env.reset()
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(0)
            if agent_name == "ad":
                agent = ad.ADAgent(model_preset("nature"), PPO_CFG, device, AD_CFG)
            else:
                agent = ppo.PPOAgent(model_preset("nature"), PPO_CFG, device)
        generator = mode.generator(1) if mode else torch.Generator().manual_seed(1)
        rng = np.random.default_rng(0)
        losses = []
        for _ in range(ROLLOUTS):
            obs, _ = agent.collect(env, obs, generator)
            losses.append(agent.update(rng))
    finally:
        env.close()
    return losses, agent


@pytest.mark.parametrize("agent_name", ["ppo", "ad"])
def test_agent_runs_on_a_device_with_the_cpu_numbers(agent_name):
    expected, _ = _train(agent_name, torch.device("cpu"))
    with FakeDevice() as mode:
        got, agent = _train(agent_name, DEVICE, mode)
        assert all(on_device(t) for t in agent.model.state_dict().values())
        assert all(on_device(t) for t in vars(agent.buf).values())
        if agent_name == "ad":
            assert all(on_device(t) for t in agent.aux.data.values())
            assert on_device(agent.carry.memory) and on_device(agent.carry.starts)
    assert got == expected
    if agent_name == "ad":  # both auxiliary losses ran, at rollouts 2 and 4
        assert [sorted(k for k in losses if k.startswith("aux_")) for losses in got] == [
            [],
            ["aux_match", "aux_pi_dist", "aux_prediction", "aux_vf_dist"],
        ] * 2


def test_the_fake_device_refuses_what_cuda_refuses():
    with FakeDevice() as mode:
        x = torch.ones(4, device=DEVICE)
        mask = torch.ones(4, dtype=torch.bool)  # on the host
        for mixed in (
            lambda: torch.where(mask, x, 0.0),
            lambda: x.masked_fill(mask, 0.0),
            lambda: x + torch.ones(4),
            lambda: x[torch.arange(2)],  # CUDA copies the index over; flagged here
            lambda: torch.rand(4, device=DEVICE, generator=torch.Generator()),
            lambda: torch.rand(4, generator=mode.generator(0)),
        ):
            with pytest.raises(RuntimeError, match="device"):
                mixed()
        assert (x + torch.tensor(1.0)).sum().item() == 8.0  # a 0-dim host scalar is fine
        assert torch.equal(x.cpu(), torch.ones(4)) and not on_device(x.cpu())
