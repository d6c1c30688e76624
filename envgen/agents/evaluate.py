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
    """`summarize` of the episodes that ended in the last `last_steps` global env steps.

    `phase` keeps only episodes logged under that phase (e.g. the original-env phase);
    the window ends at the last such episode's step.
    """
    selected = [ep for ep in episodes if phase is None or ep["phase"] == phase]
    if not selected:
        raise ValueError(f"episodes: none logged{f' in phase {phase!r}' if phase else ''}")
    end = max(ep["step"] for ep in selected)
    return summarize([ep for ep in selected if ep["step"] > end - last_steps])


def feedback_statistic(rates: np.ndarray) -> tuple[list[int], list[int]]:
    """Per skill, (mean, std) in whole percent over evaluation runs, as the authors' script.

    `rates` is (runs, skills) in percent. aszala/EnvGen
    environment_generation/update_environments.py rounds each run's rate (`round`), takes
    `np.mean` and `np.std` (ddof 0) over its `--num_evals` runs, and rounds both again;
    Python's and NumPy's rounding both send halves to the even neighbour.
    """
    rounded = np.round(np.asarray(rates, dtype=float))
    mean = np.round(rounded.mean(0)).astype(int)
    std = np.round(rounded.std(0)).astype(int)
    return mean.tolist(), std.tolist()


def sampling_policy(
    model: ActorCritic, seed: int, device: str | torch.device = "cpu"
) -> Callable[[np.ndarray], np.ndarray]:
    """The model's stochastic policy as obs uint8 (N, 64, 64, 3) -> actions int (N,).

    Puts the model in eval mode; action noise comes from `seed` alone.
    """
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

    All episodes run at once in one vec env of that many slots, seeded by `seed` (its
    slots get distinct worlds); slot j counts for evaluation seed j // episodes_per_seed
    and plays exactly one episode. `config` defaults to stock Crafter. Returns
    `success_mean` / `success_std` ({achievement: percent}, std over seeds, ddof 0),
    `feedback` ({achievement: [mean, std]}, `feedback_statistic` over seeds),
    `score_mean` / `score_std`, `reward_mean` / `reward_std` and the `episodes` records.
    """
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
    result = evaluate_policy(
        model,
        seed,
        num_seeds=runs,
        episodes_per_seed=episodes,
        device=device,
        env_factory=crafter_vec_env_factory(workers),
        config=original,
    )
    result.pop("episodes")
    return result
