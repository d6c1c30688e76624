"""Tiny real runs of the EnvGen loop's baselines: Fixed, the two curricula (replayed LLM,
data/llm_cache) and the non-LLM designers (no LLM at all). Crafter only is trained end to
end elsewhere: Table 1's PPO row in tests/test_pipeline_ray.py (no LLM call, checked
against the committed run) and AD's guard config in tests/test_results_version.py.

Kept apart from tests/test_loop.py so that `make test`'s two workers (`--dist
loadfile`) can run the two files side by side: together they were one worker's
eight minutes on a 2-core machine.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from envgen.loop.runner import execute_run
from tests.test_loop import PIPELINE_CACHE, TINY, TINY_PPO, replay_llm

pytestmark = pytest.mark.slow

# One pass over each rollout instead of PPO's three: these tests check what each method
# runs and writes, not learning (tests/test_agents_ppo.py covers the update), and their
# LLM calls are initial prompts without feedback, replayed by exact request whatever
# the PPO settings.
ONE_EPOCH = TINY.replace(ppo=tuple(sorted({**TINY_PPO, "epochs": 1}.items())))

# The curricula rank a pool of 16 designed worlds: 16 validation agents of one rollout
# each; adversarial also tests the agent in each world of its second pool, here one
# episode apiece (two took this test to 159 s on a 2-core AVX2 EPYC).
CURRICULUM = {"n_cycles": 2, "validation_steps": 256, "eval_episodes": 1}
BASELINES = {
    "fixed": {"method": "fixed", "n_cycles": 2},
    "easy_to_hard": {"method": "easy_to_hard", **CURRICULUM},
    "adversarial": {"method": "adversarial", **CURRICULUM},
}


@pytest.mark.parametrize("name", sorted(BASELINES))
def test_baseline_runs(name: str, tmp_path: Path):
    config = ONE_EPOCH.replace(**BASELINES[name])
    root = execute_run(config, 0, tmp_path / "runs", replay_llm(PIPELINE_CACHE))
    metrics = json.loads((root / "final_metrics.json").read_text())
    assert metrics["method"] == name and metrics["episodes"] > 0
    assert metrics["llm_calls"] == {"fixed": 1}.get(name, metrics["llm_calls"])
    if name in ("easy_to_hard", "adversarial"):
        scores = json.loads((root / "validation.json").read_text())
        assert len(scores) == config.curriculum_pool
        chosen = json.loads((root / "cycles/cycle-01/environments.json").read_text())
        assert len(chosen["pool_indices"]) == config.envs_per_call


@pytest.mark.parametrize(("designer", "method"), [("heuristic", "envgen"), ("random", "fixed")])
def test_non_llm_designers_run_the_loop_without_any_llm(designer: str, method: str, tmp_path):
    config = ONE_EPOCH.replace(designer=designer, method=method, n_cycles=2)
    root = execute_run(config, 0, tmp_path / "runs", llm=None)
    metrics = json.loads((root / "final_metrics.json").read_text())
    assert metrics["episodes"] > 0 and metrics["llm_calls"] == 0
    accounting = json.loads((root / "llm_accounting.json").read_text())
    assert accounting["calls"] == 0 and accounting["cost_usd"] == 0.0
    envs = json.loads((root / "cycles/cycle-01/environments.json").read_text())["configs"]
    assert len(envs) == config.envs_per_call
    if method == "envgen":  # adapted to the cycle-1 evaluation, which feedback.txt holds
        assert "+/-" in (root / "cycles/cycle-02/feedback.txt").read_text()
        assert (root / "cycles/cycle-02/environments.json").is_file()
