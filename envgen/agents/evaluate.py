"""Evaluation: scores over a window of training episodes, and separate evaluation episodes.

The paper scores the episodes played during the final 1M Crafter steps of training
(`training_window`), and between EnvGen cycles evaluates the agent without updates in
the original environment over 12 seeds, feeding per-skill mean and std to the LLM
(`evaluate_policy`; docs/paper.md, "The method in four steps", step 3). The numbers
the LLM reads are the authors' statistic (`feedback_statistic`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import torch

from envgen.agents.networks import ActorCritic
from envgen.agents.ppo import policy_step
from envgen.agents.runlog import episode_record
from envgen.agents.seeding import derive_seed
from envgen.agents.trainer import EnvFactory, crafter_vec_env_factory
from envgen.envs.crafter.config import CrafterConfig
from envgen.scoring import ACHIEVEMENTS, crafter_score, success_rates, summarize


def training_window(
    episodes: Sequence[Mapping[str, Any]], last_steps: int, phase: str | None = None
) -> dict[str, Any]:
    """`summarize` of the episodes that ended in the last `last_steps` global env steps
    (of `phase` only, when given: the window then ends at its last episode's step)."""
    selected = [ep for ep in episodes if phase is None or ep["phase"] == phase]
    if not selected:
        raise ValueError(f"episodes: none logged{f' in phase {phase!r}' if phase else ''}")
    end = max(ep["step"] for ep in selected)
    return summarize([ep for ep in selected if ep["step"] > end - last_steps])


def feedback_statistic(rates: np.ndarray) -> tuple[list[int], list[int]]:
    """Per skill, (mean, std) in whole percent over evaluation runs (`rates`: (runs,
    skills) in percent), as aszala/EnvGen environment_generation/update_environments.py:
    each run's rate rounded, `np.mean` and `np.std` (ddof 0) over runs, both rounded
    again (Python's and NumPy's rounding both send halves to the even neighbour)."""
    rounded = np.round(np.asarray(rates, dtype=float))
    mean = np.round(rounded.mean(0)).astype(int)
    std = np.round(rounded.std(0)).astype(int)
    return mean.tolist(), std.tolist()


def sampling_policy(
    model: ActorCritic, seed: int, device: str | torch.device = "cpu"
) -> Callable[[np.ndarray], np.ndarray]:
    """The model's stochastic policy as obs uint8 (N, 64, 64, 3) -> actions int (N,);
    puts the model in eval mode, action noise from `seed` alone."""
    generator = torch.Generator(device=device)
    generator.manual_seed(seed)
    model.eval()

    def act(obs: np.ndarray) -> np.ndarray:
        return policy_step(model, torch.from_numpy(obs).to(device), generator)[0].cpu().numpy()

    return act


def evaluate_policy(
    model: ActorCritic,
    seed: int,
    num_seeds: int = 12,
    episodes_per_seed: int = 1,
    device: str | torch.device = "cpu",
    env_factory: EnvFactory | None = None,
    config: CrafterConfig | None = None,
) -> dict[str, Any]:
    """Play `num_seeds * episodes_per_seed` episodes without updates; stats over seeds.

    One vec env of that many slots seeded by `seed` (distinct worlds); slot j plays one
    episode for evaluation seed j // episodes_per_seed; `config` defaults to stock
    Crafter. Returns `success_mean` / `success_std` ({achievement: percent}, ddof 0),
    `feedback` ({achievement: [mean, std]}, `feedback_statistic`), `score_mean` /
    `score_std`, `reward_mean` / `reward_std`, `pooled` and the `episodes` records."""
    factory = env_factory or crafter_vec_env_factory()
    slots = num_seeds * episodes_per_seed
    generator = torch.Generator(device=device)
    generator.manual_seed(derive_seed(seed, "eval-actions"))
    env = factory([config or CrafterConfig()], slots, seed, None)
    episodes: list[dict[str, Any] | None] = [None] * slots
    was_training = model.training
    model.eval()
    try:
        obs = env.reset()
        while any(ep is None for ep in episodes):
            actions = policy_step(model, torch.from_numpy(obs).to(device), generator)[0]
            obs, _, terminated, truncated, infos = env.step(actions.cpu().numpy())
            for i in np.flatnonzero(np.logical_or(terminated, truncated)):
                if episodes[i] is None:
                    episodes[i] = episode_record(infos[i]["episode"], 0, "eval")
    finally:
        env.close()
        model.train(was_training)

    per_seed = [
        episodes[s * episodes_per_seed : (s + 1) * episodes_per_seed] for s in range(num_seeds)
    ]
    rates = np.array([list(success_rates(eps).values()) for eps in per_seed])  # (seeds, 22)
    scores = np.array([crafter_score(r) for r in rates])
    rewards = np.array([np.mean([ep["reward"] for ep in eps]) for eps in per_seed])
    feedback = zip(*feedback_statistic(rates), strict=True)
    return {
        "feedback": {a: list(ms) for a, ms in zip(ACHIEVEMENTS, feedback, strict=True)},
        "success_mean": dict(zip(ACHIEVEMENTS, rates.mean(0).tolist(), strict=True)),
        "success_std": dict(zip(ACHIEVEMENTS, rates.std(0).tolist(), strict=True)),
        "score_mean": float(scores.mean()),
        "score_std": float(scores.std()),
        "reward_mean": float(rewards.mean()),
        "reward_std": float(rewards.std()),
        "pooled": summarize(episodes),
        "episodes": episodes,
    }


def crafter_evaluate(
    model: ActorCritic,
    seed: int,
    episodes: int,
    device: str,
    workers: int | None,
    original: CrafterConfig,
    runs: int,
) -> dict[str, Any]:
    """`evaluate_policy` in the registry's common signature (`envgen.games.Evaluate`):
    `runs` evaluation seeds of `episodes` episodes each in `original`, without the
    episode records."""
    factory = crafter_vec_env_factory(workers)
    result = evaluate_policy(
        model,
        seed,
        num_seeds=runs,
        episodes_per_seed=episodes,
        device=device,
        env_factory=factory,
        config=original,
    )
    result.pop("episodes")
    return result
