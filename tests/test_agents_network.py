"""Networks: the paper's parameter count, shapes, FLOP budgets; PPO pieces by hand."""

import numpy as np
import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

from envgen.agents.config import MODEL_PRESETS, ModelConfig, PPOConfig, PPOOverrides, model_preset
from envgen.agents.networks import ENCODERS, ActorCritic
from envgen.agents.normalizer import EwmaNormalizer
from envgen.agents.ppo import Rollout, compute_gae, sample_actions
from envgen.errors import ConfigError

# Moon et al.'s network counts 3,948,309 (their 3 normaliser statistics are nn.Parameters).
# EnvGen moves the LayerNorm of the last Linear(256 -> 1024) from its 256 inputs to its
# 1024 outputs: +2 * (1024 - 256) = +1,536. Our normaliser statistics are buffers (-3).
PAPER_PARAMS = 3_948_309 + 2 * (1024 - 256) - 3


def count_parameters(model: torch.nn.Module) -> int:
    """Number of trainable parameters (the normaliser's statistics are buffers, not counted)."""
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


def test_paper_network_parameter_count():
    model = ActorCritic(MODEL_PRESETS["paper"])
    assert count_parameters(model) == PAPER_PARAMS == 3_949_842


@pytest.mark.parametrize("name", sorted(MODEL_PRESETS))
def test_shapes_and_outputs(name):
    torch.manual_seed(0)
    model = ActorCritic(MODEL_PRESETS[name])
    obs = torch.randint(0, 256, (3, 64, 64, 3), dtype=torch.uint8)
    logprobs, value = model(obs)
    assert logprobs.shape == (3, 17) and value.shape == (3,)
    assert torch.allclose(logprobs.exp().sum(-1), torch.ones(3), atol=1e-5)
    # policy head gain 0.01: the initial policy is near uniform
    assert logprobs.exp().max() < 1.5 / 17


def _flops_per_env_step(cfg: ModelConfig) -> float:
    """One acting forward pass plus 3 epochs of forward + backward, per observation."""
    model = ActorCritic(cfg)
    obs = torch.zeros((4, 64, 64, 3), dtype=torch.uint8)
    with FlopCounterMode(display=False) as act:
        with torch.no_grad():
            model(obs)
    with FlopCounterMode(display=False) as learn:
        logprobs, value = model(obs)
        (logprobs.sum() + value.sum()).backward()
    return (act.get_total_flops() + 3 * learn.get_total_flops()) / 4


def test_flop_budgets():
    assert _flops_per_env_step(MODEL_PRESETS["paper"]) == pytest.approx(9.2e9, rel=0.05)
    assert _flops_per_env_step(MODEL_PRESETS["impala-small"]) == pytest.approx(0.6e9, rel=0.05)
    assert _flops_per_env_step(MODEL_PRESETS["nature"]) < 0.1e9


def test_registry_and_config_errors():
    assert set(ENCODERS) == {"impala", "nature"}
    with pytest.raises(ConfigError, match="model.kind"):
        ModelConfig(kind="lstm")
    with pytest.raises(ConfigError, match="model: unknown preset 'big'"):
        model_preset("big")
    with pytest.raises(ConfigError, match="ppo.minibatches"):
        PPOConfig(num_envs=3, num_steps=5, minibatches=2)
    with pytest.raises(ConfigError, match="ppo.gama: unknown key"):
        PPOOverrides({"gama": 0.9})


def test_table9_defaults():
    c = PPOConfig()
    assert (c.gamma, c.gae_lambda, c.num_envs, c.num_steps) == (0.95, 0.65, 8, 512)
    assert (c.epochs, c.minibatches, c.clip, c.ent_coef) == (3, 8, 0.2, 0.01)
    assert (c.vf_coef, c.lr, c.max_grad_norm, c.value_norm_decay) == (0.5, 3e-4, 0.5, 0.99)


def test_ewma_normalizer_debiased():
    norm = EwmaNormalizer(decay=0.99)
    norm.update(torch.tensor([2.0, 4.0]))
    mean, std = norm.mean_std()
    assert mean.item() == pytest.approx(3.0)  # debiased: one update gives the batch mean
    assert std.item() == pytest.approx(1.0)
    x = torch.tensor([0.5, 7.0])
    assert torch.allclose(norm.denormalize(norm.normalize(x)), x)


def test_gae_hand_computed():
    cfg = PPOConfig(num_envs=1, num_steps=3, minibatches=1)
    buf = Rollout.empty(cfg, torch.device("cpu"))
    buf.rewards[:, 0] = torch.tensor([1.0, 0.0, 2.0])
    buf.values[:, 0] = torch.tensor([0.5, 1.0, 0.0, 4.0])
    buf.dones[:, 0] = torch.tensor([0.0, 1.0, 0.0])
    adv, ret = compute_gae(buf, gamma=0.9, lam=0.5)
    d2 = 2.0 + 0.9 * 4.0 - 0.0  # bootstraps from values[3]
    d1 = 0.0 - 1.0  # episode ended after step 1: no bootstrap
    d0 = 1.0 + 0.9 * 1.0 - 0.5
    expected = [d0 + 0.45 * d1, d1, d2]
    assert adv[:, 0].tolist() == pytest.approx(expected)
    assert ret[:, 0].tolist() == pytest.approx(
        (torch.tensor(expected) + buf.values[:3, 0]).tolist()
    )


def test_sampling_follows_probabilities():
    logprobs = torch.log(torch.tensor([[0.7, 0.2, 0.1]])).expand(20000, 3)
    gen = torch.Generator().manual_seed(0)
    counts = np.bincount(sample_actions(logprobs, gen).numpy(), minlength=3) / 20000
    assert counts == pytest.approx([0.7, 0.2, 0.1], abs=0.02)
