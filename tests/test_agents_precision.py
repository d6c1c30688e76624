"""The GPU options of the network, checked on the CPU: bfloat16 autocast and NHWC layout.

On one fixed batch, from the same initial weights, a PPO update's and AD's auxiliary
losses under bf16 autocast stay within `BF16_RTOL` (relative) or `BF16_ATOL` (absolute,
for losses near zero) of float32's; NHWC convolutions within float32 rounding. The
tolerances are this project's statement of what "bf16 trains the same network" means:
bfloat16 keeps 8 significant bits (relative rounding 2^-8 = 0.4% per op).
"""

import argparse
import dataclasses

import numpy as np
import pytest
import torch

from envgen.agents import ad, ppo
from envgen.agents.ad_networks import ADActorCritic
from envgen.agents.config import ADConfig, ModelConfig, PPOConfig, model_preset
from envgen.agents.networks import ActorCritic
from envgen.input_checks import torch_device

BF16_RTOL, BF16_ATOL = 0.03, 0.01
NHWC_RTOL, NHWC_ATOL = 1e-4, 1e-5
CFG = PPOConfig(num_envs=4, num_steps=16, epochs=1, minibatches=1)
NETWORKS = ("nature", "impala-small")  # impala-small: the paper's layers, fewer channels


def _rollout(cls=ppo.Rollout, **extra) -> ppo.Rollout:
    torch.manual_seed(3)
    buf = cls.empty(CFG, torch.device("cpu")) if not extra else cls.allocate(CFG, **extra)
    buf.obs.copy_(torch.randint(0, 256, buf.obs.shape, dtype=torch.uint8))
    buf.actions.copy_(torch.randint(0, 17, buf.actions.shape))
    buf.logprobs.fill_(-np.log(17.0))
    buf.values.copy_(torch.randn(buf.values.shape))
    buf.rewards.copy_((torch.rand(buf.rewards.shape) < 0.1).float())
    buf.dones[7] = 1.0
    return buf


def _ppo_losses(model_cfg: ModelConfig, cls=ActorCritic, buf=None) -> dict[str, float]:
    torch.manual_seed(0)
    model = cls(model_cfg)
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-4)
    buf = buf if buf is not None else _rollout()
    advantages, returns = ppo.compute_gae(buf, CFG.gamma, CFG.gae_lambda)
    return ppo.ppo_update(model, optimizer, buf, advantages, returns, CFG, np.random.default_rng(0))


def _close(got: dict[str, float], expected: dict[str, float], rtol: float, atol: float) -> None:
    for key, value in expected.items():
        assert got[key] == pytest.approx(value, rel=rtol, abs=atol), key


@pytest.mark.parametrize("network", NETWORKS)
def test_ppo_update_in_bf16_and_nhwc_matches_float32(network):
    fp32 = model_preset(network)
    expected = _ppo_losses(fp32)
    bf16 = _ppo_losses(dataclasses.replace(fp32, bf16_autocast=True))
    assert bf16 != expected  # autocast ran: other rounding
    _close(bf16, expected, BF16_RTOL, BF16_ATOL)
    nhwc = _ppo_losses(dataclasses.replace(fp32, channels_last=True))
    _close(nhwc, expected, NHWC_RTOL, NHWC_ATOL)


def _ad_losses(model_cfg: ModelConfig) -> dict[str, float]:
    """AD's PPO phase on a fixed rollout, then one matching and one prediction loss."""
    buf = _rollout(ad.ADRollout, hidden=model_cfg.hidden_size, device=torch.device("cpu"))
    buf.memory.copy_(torch.nn.functional.normalize(torch.randn(buf.memory.shape), dim=-1))
    buf.rewards.zero_()
    buf.rewards[[2, 5, 9, 12], 0] = 1.0
    buf.rewards[[3, 6, 9], 1] = 1.0
    buf.dones.zero_()
    buf.dones[11] = 1.0  # every env: one whole episode [0, 12), then another begins
    buf.starts[[0, 12]] = True
    losses = _ppo_losses(model_cfg, ADActorCritic, buf)
    torch.manual_seed(0)
    model = ADActorCritic(model_cfg)
    aux = ad.AuxBuffer(ADConfig(aux_every=1), CFG, model_cfg.hidden_size, torch.device("cpu"))
    aux.add(buf, torch.randn(CFG.num_steps, CFG.num_envs))
    episodes, steps = aux.episodes(0.1), aux.steps()
    batch = {
        "anchor": episodes[0].goal_after[[0, 1, 2, 1]],
        "positive": episodes[1].goal_after[[0, 1, 2, 0]],
        "negative": episodes[1].goal_after[[2, 1, 0, 1]],
        "steps": episodes[0].steps[[0, 3, 6, 9]],
    }
    old = ADActorCritic(model_cfg)
    old.load_state_dict(model.state_dict())
    for name, loss in ad.match_loss(model, old, batch, steps, ADConfig()).items():
        losses[f"match_{name}"] = loss.item()
    pred = next(ad.prediction_batches(episodes[:1], ADConfig(), np.random.default_rng(0)))
    for name, loss in ad.prediction_loss(model, old, pred, steps, ADConfig()).items():
        losses[f"prediction_{name}"] = loss.item()
    return losses


@pytest.mark.parametrize("network", NETWORKS)
def test_ad_losses_in_bf16_and_nhwc_match_float32(network):
    fp32 = model_preset(network)
    expected = _ad_losses(fp32)
    assert {"match_match", "prediction_prediction", "policy", "value"} <= set(expected)
    bf16 = _ad_losses(dataclasses.replace(fp32, bf16_autocast=True))
    assert bf16 != expected
    _close(bf16, expected, BF16_RTOL, BF16_ATOL)
    nhwc = _ad_losses(dataclasses.replace(fp32, channels_last=True))
    _close(nhwc, expected, NHWC_RTOL, NHWC_ATOL)


def test_a_gpu_index_this_machine_lacks_is_refused(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    assert torch_device("cuda:0") == "cuda:0"
    with pytest.raises(argparse.ArgumentTypeError, match="1 GPU"):
        torch_device("cuda:1")
