"""A handed-off campaign run resumes from its committed checkpoint.

`results/runs/` holds runs a campaign stopped part-way, checkpoint included; the machine
that takes such a run over resumes it from that file. However checkpoints are written or
resumed, these must still be read: each committed one is resumed by a `Trainer` built
from its run's run.yaml as `envgen run` builds it, and its saved envs reopen.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import torch

from envgen.agents.checkpoint import load_checkpoint
from envgen.agents.runlog import read_jsonl_written
from envgen.agents.trainer import Trainer
from envgen.games import game_spec
from envgen.loop.config import RunConfig
from envgen.store.manifest import CHECKPOINT_DIR, LATEST_CHECKPOINT, is_sealed
from envgen.store.run_dir import NOT_CONFIG, RunDir

REPO = Path(__file__).resolve().parents[1]
# A handed-off run's checkpoint (it is committed with the run); a finished run is sealed
# and may keep its last checkpoint on the machine that trained it, never committed.
COMMITTED = sorted(
    c
    for c in REPO.glob(f"results/runs/*/seed-*/{LATEST_CHECKPOINT}")
    if not is_sealed(c.parent.parent)
)


def _id(checkpoint: Path) -> str:
    return str(checkpoint.parent.parent.relative_to(REPO / "results" / "runs"))


@pytest.mark.parametrize("checkpoint", COMMITTED, ids=[_id(c) for c in COMMITTED])
def test_a_committed_checkpoint_resumes_and_reopens_its_envs(checkpoint, tmp_path):
    source = RunDir(checkpoint.parent.parent)
    data = source.read_config()
    config = RunConfig.from_dict({k: v for k, v in data.items() if k not in NOT_CONFIG})
    run = RunDir(tmp_path / "run")
    (run.root / CHECKPOINT_DIR).mkdir(parents=True)
    shutil.copyfile(checkpoint, run.root / LATEST_CHECKPOINT)
    for name in ("episodes", "metrics"):
        shutil.copyfile(getattr(source, name), getattr(run, name))
    step = load_checkpoint(checkpoint.parent, torch.device("cpu"))["counters"]["global_step"]
    game = game_spec(config.game)
    trainer = Trainer(
        game.model_config(config.model, **config.gpu_options),
        game.ppo_config(config.ppo),
        data["seed"],
        run.root,
        env_factory=game.vec_env_factory(1),
        episode_record=game.episode_record,
        summarize=game.summarize,
        agent=config.agent,
    )
    try:
        assert trainer.resume() and trainer.global_step == step > 0
        assert max(r["step"] for r in read_jsonl_written(run.metrics)) == step
        assert all(r["step"] <= step for r in read_jsonl_written(run.episodes))
        trainer.mixture = trainer._saved_env[0]  # the mixture it was training on
        trainer._open_env()  # the envs as they were, every episode mid-way
        assert trainer.obs.shape[0] == trainer.ppo_cfg.num_envs
    finally:
        trainer.close()
