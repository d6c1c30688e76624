"""A cohort resumes only from counters the run alone would accept.

`CohortTrainer.resume` built its counters from the first slice as they came: a seed's
`global_step = -100000` resumed, cut both seeds' logs to nothing and wrote steps
-99,968, -99,936, ...; `"abc"` gave a TypeError traceback; `rollouts = 999` was
accepted. Each slice's counters now pass `checked_counters` and agree with the cohort's
step and with every other seed's, before any log is cut. A slice that is malformed
otherwise (its envs' mixture, a random stream) is one line naming that slice, also
before any log is cut: a damaged mixture was a ValueError traceback after both seeds'
logs were cut, and any seed's damaged stream was reported as the first seed's file.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import torch

from envgen.agents.cohort_trainer import CohortTrainer, crafter_cohort_env_factory
from envgen.agents.config import ModelConfig, PPOConfig
from envgen.envs.crafter.config import CrafterConfig
from envgen.errors import EnvGenError
from envgen.store.manifest import CHECKPOINT_DIR

MODEL = ModelConfig(channels=(4, 8), blocks_per_stack=1, embed_size=16, hidden_size=16)
PPO = PPOConfig(num_envs=2, num_steps=16, minibatches=2, epochs=1, checkpoint_every=64)
SEEDS = (1, 2)
LOGS = ("episodes.jsonl", "metrics.jsonl")


def _cohort(root: Path) -> CohortTrainer:
    dirs = [root / f"seed-{s}" for s in SEEDS]
    return CohortTrainer(MODEL, PPO, SEEDS, dirs, env_factory=crafter_cohort_env_factory(1))


def _refused_resume(trained: Path, tmp_path: Path, seed: int, edit) -> tuple[Path, str]:
    """Copy the cohort, pass seed `seed`'s latest slice through `edit`, resume: the
    slice's path and the one-line refusal, after checking that no seed's log was cut."""
    root = tmp_path / "run"
    shutil.copytree(trained, root)
    latest = root / f"seed-{seed}" / CHECKPOINT_DIR / "latest.pt"
    torch.save(edit(torch.load(latest, weights_only=True)), latest)
    logs = {p: p.read_bytes() for s in SEEDS for p in (root / f"seed-{s}" / n for n in LOGS)}
    trainer = _cohort(root)
    with pytest.raises(EnvGenError) as err:
        trainer.resume()
    trainer.close()
    assert {p: p.read_bytes() for p in logs} == logs
    message = str(err.value)
    assert "\n" not in message, message
    return latest, message


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> Path:
    """A cohort of 2 trained 128 steps: slices at 64 and 128 (latest.pt at 128)."""
    root = tmp_path_factory.mktemp("cohort")
    trainer = _cohort(root)
    trainer.train_until(128, [CrafterConfig(length=20)])
    trainer.close()
    return root


@pytest.mark.parametrize(
    ("seed", "change", "words"),
    [
        (1, {"global_step": -100_000}, "global_step is -100000, not a whole number >= 0"),
        (2, {"global_step": "abc"}, "global_step is 'abc', not a whole number >= 0"),
        (1, {"rollouts": 999}, "global_step 128 is not rollouts (999) x the rollout size"),
        (
            1,
            {"global_step": 64, "rollouts": 2, "checkpoint_step": 64},
            "global_step 64 is not the cohort's step 128",
        ),
        (2, {"checkpoints": 7}, "differ from"),
    ],
)
def test_a_slices_counters_are_checked_before_any_log_is_cut(
    trained, tmp_path, seed, change, words
):
    def edit(state):
        state["counters"].update(change)
        return state

    latest, message = _refused_resume(trained, tmp_path, seed, edit)
    assert message.startswith(f"{latest}: "), message
    assert words in message and "remove every seed's checkpoints" in message, message


@pytest.mark.parametrize(
    ("seed", "damage"),
    [
        (1, lambda state: {**state, "env": ({"configs": "?"}, state["env"][1])}),
        (2, lambda state: {**state, "action_rng": {"device": "cpu", "state": "?"}}),
    ],
    ids=["mixture", "stream"],
)
def test_a_malformed_slice_is_one_line_naming_it_before_any_log_is_cut(
    trained, tmp_path, seed, damage
):
    latest, message = _refused_resume(trained, tmp_path, seed, damage)
    assert message.startswith(f"{latest}: malformed"), message
    assert "remove every seed's checkpoints" in message, message


def test_untouched_slices_still_resume(trained, tmp_path):
    root = tmp_path / "run"
    shutil.copytree(trained, root)
    trainer = _cohort(root)
    assert trainer.resume() and trainer.global_step == 128
    assert trainer.counters.rollouts == 4
    trainer.close()
