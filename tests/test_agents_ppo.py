"""`ppo_update` and `compute_gae` against hand computations on a tiny net and a fixed batch.

The rollout is made by hand (2 envs x 4 steps of random frames), the advantages and
returns are given (they are computed once per rollout, outside the update), and the
expected numbers are CleanRL-style PPO written out here from the definitions: ratio
exp(new - old log-prob), clipped surrogate on rollout-normalised advantages, MSE of the
value head to EWMA-normalised returns, entropy of the policy, approximate KL
mean((r - 1) - log r), clip fraction mean(|r - 1| > clip).
"""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest
import torch

from envgen.agents.config import ModelConfig, PPOConfig
from envgen.agents.networks import ActorCritic
from envgen.agents.ppo import Rollout, compute_gae, ppo_update

TINY = ModelConfig(kind="nature", channels=(4, 8, 8), embed_size=16, hidden_size=16)
T, N = 4, 2
# New minus old log-probability per transition (time-major), so the first minibatch's
# ratios are exp(SHIFT): 4 of 8 lie outside [0.8, 1.2], none near its edges.
SHIFT = torch.tensor([[0.0, 0.5], [-0.5, 0.1], [0.15, -0.05], [-0.4, 0.7]])


def config(**kw) -> PPOConfig:
    return PPOConfig(num_envs=N, num_steps=T, **{"epochs": 1, "minibatches": 1, **kw})


def make_model() -> ActorCritic:
    torch.manual_seed(0)
    return ActorCritic(TINY)


def make_batch(model: ActorCritic) -> tuple[Rollout, torch.Tensor, torch.Tensor]:
    """A rollout whose old log-probs are the model's own minus SHIFT; advantages, returns."""
    cfg = config()
    buf = Rollout.empty(cfg, torch.device("cpu"))
    gen = torch.Generator().manual_seed(1)
    buf.obs.copy_(torch.randint(0, 256, buf.obs.shape, generator=gen, dtype=torch.uint8))
    buf.actions.copy_(torch.randint(0, TINY.num_actions, (T, N), generator=gen))
    with torch.no_grad():
        logprobs_all, _ = model(buf.obs.flatten(0, 1))
    current = logprobs_all.gather(1, buf.actions.flatten()[:, None])[:, 0].view(T, N)
    buf.logprobs.copy_(current - SHIFT)
    advantages = torch.tensor([[1.0, -2.0], [0.5, 3.0], [-1.0, 0.0], [2.0, -0.5]])
    returns = torch.tensor([[1.0, 0.0], [2.0, -1.0], [0.5, 3.0], [-2.0, 1.5]])
    return buf, advantages, returns


def hand_losses(
    model: ActorCritic, buf: Rollout, advantages: torch.Tensor, returns: torch.Tensor, clip: float
) -> dict[str, torch.Tensor]:
    """CleanRL-style PPO on the whole batch, from the definitions (module docstring)."""
    logprobs_all, value = model(buf.obs.flatten(0, 1))
    new = logprobs_all.gather(1, buf.actions.flatten()[:, None])[:, 0]
    log_ratio = new - buf.logprobs.flatten()
    ratio = torch.exp(log_ratio)
    adv = advantages.flatten()
    adv = (adv - adv.mean()) / (adv.std() + 1e-8)  # torch.std: unbiased, as CleanRL
    surrogate = torch.minimum(adv * ratio, adv * torch.clamp(ratio, 1 - clip, 1 + clip))
    # The EWMA normaliser fed only this batch (any number of times) has, debiased, the
    # batch's mean and population variance.
    ret = returns.flatten()
    target = (ret - ret.mean()) / ret.var(unbiased=False).sqrt()
    probs = logprobs_all.exp()
    return {
        "policy": -surrogate.mean(),
        "value": ((value - target) ** 2).mean(),
        "entropy": -(probs * logprobs_all).sum(1).mean(),
        "kl": ((ratio - 1) - log_ratio).mean(),
        "clip": ((ratio - 1).abs() > clip).float().mean(),
    }


def total_loss(losses: dict[str, torch.Tensor], cfg: PPOConfig) -> torch.Tensor:
    return losses["policy"] + cfg.vf_coef * losses["value"] - cfg.ent_coef * losses["entropy"]


def update(model: ActorCritic, cfg: PPOConfig, buf, advantages, returns) -> dict[str, float]:
    optimizer = torch.optim.Adam(model.parameters(), lr=cfg.lr)
    return ppo_update(model, optimizer, buf, advantages, returns, cfg, np.random.default_rng(0))


def test_first_minibatch_matches_hand_computation():
    model = make_model()
    buf, advantages, returns = make_batch(model)
    cfg = config()
    before = copy.deepcopy(model)
    got = update(model, cfg, buf, advantages, returns)

    ratio = torch.exp(SHIFT)
    expected_clip = ((ratio - 1).abs() > cfg.clip).float().mean().item()
    assert expected_clip == 0.5  # the batch was built so: 0.5, -0.5, -0.4, 0.7 clip
    assert got["clip"] == expected_clip
    assert got["kl"] == pytest.approx((ratio - 1 - SHIFT).mean().item(), rel=1e-5)

    before.value_norm.update(returns)  # the update's normaliser state when it scored
    with torch.no_grad():
        hand = hand_losses(before, buf, advantages, returns, cfg.clip)
    for key in ("policy", "value", "entropy", "kl", "clip"):
        assert got[key] == pytest.approx(hand[key].item(), rel=1e-5, abs=1e-7), key


def test_ratio_one_gives_no_clipping_and_no_kl():
    model = make_model()
    buf, advantages, returns = make_batch(model)
    buf.logprobs.add_(SHIFT)  # old log-probs = the model's: every ratio is 1
    got = update(model, config(), buf, advantages, returns)
    assert got["clip"] == 0.0
    assert got["kl"] == pytest.approx(0.0, abs=1e-7)
    # Advantages normalised over the rollout have mean 0: the surrogate is 0 at ratio 1.
    assert got["policy"] == pytest.approx(0.0, abs=1e-6)


def test_second_epoch_statistics_from_the_updated_policy():
    """Epoch 2's clip fraction and KL: the stored old log-probs against the policy after
    epoch 1's step (obtained by running epoch 1 alone from the same start)."""
    cfg1, cfg2 = config(epochs=1), config(epochs=2)
    one, two = make_model(), make_model()
    buf, advantages, returns = make_batch(one)
    first = update(one, cfg1, buf, advantages, returns)
    both = update(two, cfg2, buf, advantages, returns)

    with torch.no_grad():
        second = hand_losses(one, buf, advantages, returns, cfg2.clip)
    # The step moved the policy: some ratios differ from epoch 1's.
    assert second["kl"].item() != pytest.approx(first["kl"], rel=1e-3)
    for key in ("clip", "kl", "policy", "value", "entropy"):
        expected = (first[key] + second[key].item()) / 2
        assert both[key] == pytest.approx(expected, rel=1e-5, abs=1e-7), key


# Table 9's coefficients, then one loss term at a time dominating the step.
COEFS = [{}, {"vf_coef": 0.0, "ent_coef": 1.0}, {"vf_coef": 5.0, "ent_coef": 0.0}]


@pytest.mark.parametrize("coefs", COEFS, ids=["table9", "entropy", "value"])
def test_one_step_is_adams_step_down_the_hand_gradient(coefs):
    model = make_model()
    buf, advantages, returns = make_batch(model)
    cfg = config(lr=1e-4, **coefs)
    start = copy.deepcopy(model)
    start.value_norm.update(returns)
    loss_before = total_loss(hand_losses(start, buf, advantages, returns, cfg.clip), cfg)
    loss_before.backward()
    update(model, cfg, buf, advantages, returns)

    # Gradient-norm clip, then Adam's first step: -lr * g / (|g| + eps) per parameter.
    grad = torch.cat([p.grad.flatten() for p in start.parameters()])
    grad = grad * min(1.0, cfg.max_grad_norm / (grad.norm().item() + 1e-6))
    step = torch.cat(
        [(p1 - p0).flatten() for p1, p0 in zip(model.parameters(), start.parameters(), strict=True)]
    )
    assert torch.allclose(step, -cfg.lr * grad / (grad.abs() + 1e-8), rtol=1e-3, atol=1e-7)
    assert torch.dot(step, grad).item() < 0
    with torch.no_grad():
        loss_after = total_loss(hand_losses(model, buf, advantages, returns, cfg.clip), cfg)
    assert loss_after.item() < loss_before.item()


def test_update_leaves_the_given_targets_alone():
    """AD stores the same returns for its aux phase: the update must not modify them."""
    model = make_model()
    buf, advantages, returns = make_batch(model)
    adv0, ret0 = advantages.clone(), returns.clone()
    update(model, config(epochs=2, minibatches=2), buf, advantages, returns)
    assert torch.equal(advantages, adv0) and torch.equal(returns, ret0)


def test_gae_two_envs_with_death_and_time_limit():
    """Env 0 dies after step 1, env 1 hits the time limit after step 2 (both cut the
    bootstrap, as the vec env keeps no final observation); both bootstrap at the end."""
    gamma, lam = 0.9, 0.5
    buf = Rollout.empty(PPOConfig(num_envs=2, num_steps=4, minibatches=1), torch.device("cpu"))
    buf.rewards.copy_(torch.tensor([[1.0, 0.0], [0.0, 2.0], [0.5, 1.0], [0.0, 0.0]]))
    buf.values.copy_(torch.tensor([[0.5, 1.0], [1.0, 0.0], [2.0, 3.0], [0.0, 1.0], [4.0, -1.0]]))
    buf.dones.copy_(torch.tensor([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0], [0.0, 0.0]]))
    adv, ret = compute_gae(buf, gamma, lam)

    def by_hand(r, v, done):
        out, last = [0.0] * 4, 0.0
        for t in (3, 2, 1, 0):
            keep = 0.0 if done[t] else 1.0
            delta = r[t] + gamma * v[t + 1] * keep - v[t]
            last = delta + gamma * lam * keep * last
            out[t] = last
        return out

    # Written out for env 0: steps 2-3 bootstrap from v[4]; step 1 ends the episode.
    d3 = 0.0 + 0.9 * 4.0 - 0.0
    d2 = 0.5 + 0.9 * 0.0 - 2.0
    d1 = 0.0 - 1.0
    d0 = 1.0 + 0.9 * 1.0 - 0.5
    env0 = [d0 + 0.45 * d1, d1, d2 + 0.45 * d3, d3]
    assert by_hand([1.0, 0.0, 0.5, 0.0], [0.5, 1.0, 2.0, 0.0, 4.0], [0, 1, 0, 0]) == (
        pytest.approx(env0)
    )
    assert adv[:, 0].tolist() == pytest.approx(env0)
    env1 = by_hand([0.0, 2.0, 1.0, 0.0], [1.0, 0.0, 3.0, 1.0, -1.0], [0, 0, 1, 0])
    assert env1[2] == pytest.approx(1.0 - 3.0)  # the time limit: no bootstrap from v[3]
    assert adv[:, 1].tolist() == pytest.approx(env1)
    assert torch.allclose(ret, adv + buf.values[:-1])
    assert math.isclose(ret[0, 0].item(), env0[0] + 0.5, rel_tol=1e-6)
