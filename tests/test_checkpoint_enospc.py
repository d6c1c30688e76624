"""A checkpoint that cannot be written (a full disk) is one line and leaves no tmp file.

ENOSPC while `envgen run` wrote a checkpoint ended in a torch RuntimeError traceback and
left `latest.pt.tmp` beside the previous checkpoint.
"""

from __future__ import annotations

import errno
from pathlib import Path

import pytest
import torch

from envgen.agents.checkpoint import LATEST, load_checkpoint
from envgen.agents.config import ModelConfig, PPOConfig
from envgen.agents.trainer import Trainer, crafter_vec_env_factory
from envgen.envs.crafter.config import CrafterConfig
from envgen.errors import EnvGenError

MODEL = ModelConfig(channels=(4, 8), blocks_per_stack=1, embed_size=16, hidden_size=16)
PPO = PPOConfig(num_envs=2, num_steps=16, minibatches=2, epochs=1, checkpoint_every=32)


class _FullDisk:
    """A file whose writes fail as on a full disk, after the first few bytes."""

    def __init__(self, f):
        self.f, self.left = f, 100

    def write(self, data) -> int:
        if self.left <= 0:
            raise OSError(errno.ENOSPC, "No space left on device")
        self.left -= len(data)
        return self.f.write(data)

    def __getattr__(self, name):
        return getattr(self.f, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.f.close()


def test_a_full_disk_during_a_checkpoint_is_one_line_and_keeps_the_previous(tmp_path, monkeypatch):
    run_dir = tmp_path / "run"
    trainer = Trainer(MODEL, PPO, 3, run_dir, env_factory=crafter_vec_env_factory(1))
    trainer.train_until(32, [CrafterConfig(length=20)])  # a checkpoint at step 32
    real_open = Path.open

    def open_(path, mode="r", *args, **kwargs):
        f = real_open(path, mode, *args, **kwargs)
        return _FullDisk(f) if path.name.endswith(".pt.tmp") else f

    monkeypatch.setattr(Path, "open", open_)
    with pytest.raises(EnvGenError) as err:
        trainer.train_until(64, [CrafterConfig(length=20)])
    monkeypatch.undo()
    trainer.close()
    message = str(err.value)
    latest = run_dir / "checkpoints" / LATEST
    assert "\n" not in message and message.startswith(f"{latest}: "), message
    assert "could not be written" in message and "free space" in message, message
    assert sorted(p.name for p in latest.parent.iterdir()) == [LATEST]  # no latest.pt.tmp
    state = load_checkpoint(latest.parent, torch.device("cpu"))
    assert state["counters"]["global_step"] == 32
