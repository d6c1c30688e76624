"""Achievement Distillation: network against the reference's sizes, auxiliary losses,
partial transport, and a tiny kill-and-resume run through the real trainer."""

from pathlib import Path

import numpy as np
import pytest
import torch

from envgen.agents import ad, trainer
from envgen.agents.ad_networks import ADActorCritic
from envgen.agents.config import AGENTS, ADConfig, PPOConfig, model_preset
from envgen.agents.runlog import read_jsonl
from envgen.agents.trainer import Trainer, crafter_vec_env_factory
from envgen.envs.crafter.config import CrafterConfig
from envgen.errors import ConfigError
from envgen.loop.config import RunConfig
from tests.test_agents_network import count_parameters

# snu-mllab/Achievement-Distillation, PPOADModel(**configs/ppo_ad.yaml model_kwargs) on
# Crafter's spaces: trainable parameters per child module, counted from their code.
REFERENCE = {
    "enc": 3_667_200,
    "linear": 262_656,
    "pi_head": 34_833,
    "vf_head": 2_049,
    "action_mlp": 2_116_642,
    "next_goal_pred_mlp": 3_150_848,
}
OURS = {  # the same modules under our names
    "enc": "encoder",
    "linear": "final",
    "pi_head": "policy_head",
    "vf_head": "value_head",
    "action_mlp": "action_film",
    "next_goal_pred_mlp": "next_achievement",
}


def test_paper_network_matches_the_reference_sizes():
    model = ADActorCritic(model_preset("paper"))
    counts = {name: count_parameters(m) for name, m in model.named_children()}
    for ref, ours in OURS.items():
        if ref != "linear":
            assert counts[ours] == REFERENCE[ref], ref
    # EnvGen's LayerNorm after the 256 -> 1024 layer instead of before: 2 x (1024 - 256).
    assert counts["final"] == REFERENCE["linear"] + 1_536
    assert count_parameters(model) == sum(REFERENCE.values()) + 1_536 == 9_235_764


def test_shapes_memory_and_unit_representations():
    torch.manual_seed(0)
    model = ADActorCritic(model_preset("nature"))
    obs = torch.randint(0, 256, (5, 64, 64, 3), dtype=torch.uint8)
    memory = torch.nn.functional.normalize(torch.randn(5, 256), dim=-1)
    logprobs, value = model(obs, memory)
    assert logprobs.shape == (5, 17) and value.shape == (5,)
    assert torch.allclose(logprobs.exp().sum(-1), torch.ones(5))
    assert not torch.allclose(model(obs)[0], logprobs)  # the policy reads the memory
    rep = model.achievement(obs[:3], obs[1:4])
    assert rep.shape == (3, 256) and torch.allclose(rep.norm(dim=-1), torch.ones(3))
    # An all-zero "after" image means no next achievement: normalize(0 - latent(before)).
    blank = model.achievement(obs[:1], torch.zeros_like(obs[:1]))
    expected = torch.nn.functional.normalize(-model.encode(obs[:1]), dim=-1)
    assert torch.allclose(blank, expected, atol=1e-6)
    pred = model.predict_next(model.encode(obs), torch.arange(5), memory)
    assert pred.shape == (5, 256) and torch.allclose(pred.norm(dim=-1), torch.ones(5))


def test_partial_transport_pairs_like_with_like():
    rng = np.random.default_rng(0)
    a = rng.normal(size=(3, 8))
    a /= np.linalg.norm(a, axis=1, keepdims=True)
    b = a[[2, 0, 1, 1]] + 0.01  # 4 targets: a permutation of the sources plus a repeat
    b /= np.linalg.norm(b, axis=1, keepdims=True)
    plan = ad.entropic_partial_transport(1.0 - a @ b.T, reg=0.05, iters=100)
    assert plan.sum() == pytest.approx(3.0)  # min(3, 4) units moved
    assert (plan.sum(axis=1) <= 1 + 1e-6).all() and (plan.sum(axis=0) <= 1 + 1e-6).all()
    rows, cols = np.nonzero(plan > 0.5)
    assert dict(zip(rows.tolist(), cols.tolist(), strict=True)) == {0: 1, 2: 0}  # 1 ~ 2 or 3


def _fixed_buffer() -> tuple[ad.AuxBuffer, ADConfig, ADActorCritic]:
    """One rollout of 2 envs x 40 steps: random images, unlocks at fixed steps."""
    torch.manual_seed(1)
    cfg = ADConfig(aux_every=1)
    ppo_cfg = PPOConfig(num_envs=2, num_steps=40, minibatches=1)
    model = ADActorCritic(model_preset("nature"))
    buf = ad.ADRollout.allocate(ppo_cfg, 256, torch.device("cpu"))
    buf.obs.copy_(torch.randint(0, 256, buf.obs.shape, dtype=torch.uint8))
    buf.actions.copy_(torch.randint(0, 17, buf.actions.shape))
    buf.memory.copy_(torch.nn.functional.normalize(torch.randn(buf.memory.shape), dim=-1))
    buf.rewards[[3, 8, 15, 25, 31], 0] = 1.0
    buf.rewards[[5, 12, 22, 33], 1] = 1.0
    buf.rewards[[10, 20], 1] = 0.1  # health, not an unlock
    buf.starts[0] = True
    buf.starts[[19, 36], 0] = True
    buf.starts[[24], 1] = True
    buf.dones[[18, 35], 0] = 1.0
    buf.dones[[23], 1] = 1.0
    aux = ad.AuxBuffer(cfg, ppo_cfg, 256, torch.device("cpu"))
    aux.add(buf, torch.randn(40, 2))
    return aux, cfg, model


def test_buffer_splits_whole_episodes_and_their_goals():
    aux, cfg, _ = _fixed_buffer()
    episodes = aux.episodes(cfg.unlock_reward)
    # env 0: [0, 19) and [19, 36) ended; [36, 40) did not. env 1: [0, 24) ended.
    got = [
        (int(e.steps[0]) % 2, int(e.steps[0]) // 2, len(e.steps), e.goals.tolist())
        for e in episodes
    ]
    assert got == [(0, 0, 19, [4, 9, 16]), (0, 19, 17, [7, 13]), (1, 0, 24, [6, 13, 23])]


@pytest.mark.parametrize("kind", ["match", "prediction"])
def test_one_aux_update_lowers_its_loss_on_a_fixed_batch(kind):
    aux, cfg, model = _fixed_buffer()
    episodes, steps = aux.episodes(cfg.unlock_reward), aux.steps()
    rng = np.random.default_rng(0)
    if kind == "match":  # a fixed batch: anchors of episode 0, positives/negatives of 1 and 2
        batch = {
            "anchor": episodes[0].goal_after[[0, 1, 2]],
            "positive": torch.cat([episodes[1].goal_after, episodes[2].goal_after[:1]]),
            "negative": episodes[2].goal_after[[1, 2, 0]],
            "steps": episodes[0].steps[[0, 5, 10]],
        }
        loss_fn = ad.match_loss
    else:
        batch = next(ad.prediction_batches(episodes[:1], cfg, rng))
        loss_fn = ad.prediction_loss
    old = ADActorCritic(model_preset("nature"))
    old.load_state_dict(model.state_dict())
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-4)
    before = loss_fn(model, old, batch, steps, cfg)
    total = before[kind] + before["pi_dist"] + before["vf_dist"]
    assert before["pi_dist"].item() == pytest.approx(0.0, abs=1e-6)  # same policy
    optimizer.zero_grad()
    total.backward()
    optimizer.step()
    after = loss_fn(model, old, batch, steps, cfg)
    assert after[kind].item() < before[kind].item()
    assert after["vf_dist"].item() < before["vf_dist"].item()


def test_aux_phase_runs_both_losses_with_their_optimisers():
    aux, cfg, model = _fixed_buffer()
    cfg = ADConfig(aux_every=1, aux_epochs=1)
    optimizers = {k: torch.optim.Adam(model.parameters(), lr=3e-4) for k in ("match", "prediction")}
    stats = ad.aux_phase(model, optimizers, aux, cfg, 0.5, np.random.default_rng(0))
    assert set(stats) == {"match", "prediction", "pi_dist", "vf_dist"}
    assert all(np.isfinite(v) for v in stats.values())
    assert all(opt.state for opt in optimizers.values())


# 2 envs x 16 steps = 32 steps per rollout; checkpoint every 3 rollouts; the aux phase
# (every 8 rollouts) falls between the checkpoints at 6 and 9 rollouts.
PPO = PPOConfig(num_envs=2, num_steps=16, minibatches=2, checkpoint_every=96)
# Short episodes with wood at hand (place_table) so that the buffer holds goals.
PHASE_1 = [CrafterConfig(length=20, inventory=(("wood", 5), ("sapling", 1)))]
PHASE_2 = [CrafterConfig(length=24, inventory=(("wood", 3),))]


def _ad_trainer(run_dir: Path) -> Trainer:
    return Trainer(
        model_preset("nature"), PPO, 5, run_dir, env_factory=crafter_vec_env_factory(1), agent="ad"
    )


def _schedule(t: Trainer, stop: int | None = None) -> None:
    t.train_until(128 if stop is None else min(128, stop), PHASE_1, phase="llm")
    t.train_until(320 if stop is None else stop, PHASE_2, phase="crafter")


def _outcome(run_dir: Path, t: Trainer) -> tuple:
    metrics = [
        {k: v for k, v in m.items() if not k.startswith("time/")}
        for m in read_jsonl(run_dir / "metrics.jsonl")
    ]
    params = {k: v.clone() for k, v in t.model.state_dict().items()}
    return (run_dir / "episodes.jsonl").read_text(), metrics, params


def test_tiny_ad_run_resumes_bit_identically(tmp_path, monkeypatch):
    # 1 aux epoch instead of 6 keeps the test in seconds; the schedule is the reference's.
    monkeypatch.setattr(ad, "ADConfig", lambda: ADConfig(aux_epochs=1))
    full = _ad_trainer(tmp_path / "full")
    _schedule(full)
    expected = _outcome(tmp_path / "full", full)
    full.close()
    aux = [m for m in expected[1] if "losses/aux_prediction" in m]
    assert len(aux) == 1 and "losses/aux_match" in aux[0]  # the aux phase ran, both losses

    killed = _ad_trainer(tmp_path / "resumed")
    _schedule(killed, stop=224)  # killed after rollout 7, its checkpoint at rollout 6
    killed.close()
    resumed = _ad_trainer(tmp_path / "resumed")
    assert resumed.resume() and resumed.global_step == 192
    _schedule(resumed)
    got = _outcome(tmp_path / "resumed", resumed)
    resumed.close()

    assert got[0] == expected[0]
    assert got[1] == expected[1]
    assert all(torch.equal(got[2][k], expected[2][k]) for k in expected[2])

    ppo_run = Trainer(model_preset("nature"), PPO, 5, tmp_path / "resumed")
    with pytest.raises(ConfigError, match="agent"):
        ppo_run.resume()  # an AD checkpoint is not resumed as PPO
    ppo_run.close()


def test_agent_names_and_run_config_hash():
    assert tuple(trainer.AGENTS) == AGENTS
    ppo = RunConfig()
    assert "agent" not in ppo.to_dict()  # PPO configs keep the hashes they had
    adc = ppo.replace(agent="ad")
    assert adc.to_dict()["agent"] == "ad" and adc.config_hash() != ppo.config_hash()
    with pytest.raises(ConfigError, match="agent"):
        RunConfig(agent="dreamer")
