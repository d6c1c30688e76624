"""Checkpoints run no code from the file and resume on another device.

A run directory may come from someone else: its checkpoint is read with
`torch.load(weights_only=True)` and the running envs' state inside it is plain data, so
a pickle payload anywhere in it executes nothing and ends in one line naming the file.
A checkpoint whose action generator has the CUDA layout (16 bytes, not the CPU's 5,056)
resumes on the CPU.
"""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest
import torch

from envgen.agents.checkpoint import LATEST, load_checkpoint
from envgen.agents.config import PPOConfig, model_preset
from envgen.agents.runlog import read_jsonl
from envgen.agents.trainer import Trainer, crafter_vec_env_factory
from envgen.envs.crafter.config import CrafterConfig
from envgen.errors import EnvGenError
from tests.envgen_cli import envgen_subprocess

REPO = Path(__file__).resolve().parents[1]
PPO = PPOConfig(num_envs=2, num_steps=16, minibatches=2, checkpoint_every=32)
CONFIGS = [CrafterConfig(length=20)]


class _Payload:
    """Writes a marker file when unpickled: what an attacker would run instead."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return (Path.write_text, (self.marker, "ran"))


def _trainer(run_dir: Path) -> Trainer:
    return Trainer(model_preset("nature"), PPO, 3, run_dir, env_factory=crafter_vec_env_factory(1))


@pytest.fixture(scope="module")
def checkpointed(tmp_path_factory) -> Path:
    """A run directory holding a real checkpoint at step 32 (mid-episode envs)."""
    run_dir = tmp_path_factory.mktemp("run")
    trainer = _trainer(run_dir)
    trainer.train_until(32, CONFIGS)
    trainer.close()
    return run_dir


def _copy_run(src: Path, dst: Path) -> Path:
    (dst / "checkpoints").mkdir(parents=True)
    for name in ("episodes.jsonl", "metrics.jsonl", f"checkpoints/{LATEST}"):
        (dst / name).write_bytes((src / name).read_bytes())
    return dst


def _raw(run_dir: Path) -> dict:
    return torch.load(run_dir / "checkpoints" / LATEST, weights_only=True)


def _one_line(text: str, *words: str) -> None:
    lines = text.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in text, text
    for word in words:
        assert word in lines[0], (word, lines[0])


def test_checkpoint_holds_only_cpu_tensors_and_plain_values(checkpointed):
    def walk(value):
        if isinstance(value, dict):
            for item in value.values():
                walk(item)
        elif isinstance(value, list | tuple):
            for item in value:
                walk(item)
        elif isinstance(value, torch.Tensor):
            assert value.device.type == "cpu"
        else:
            assert value is None or type(value) in (bool, int, float, str, bytes), type(value)

    walk(_raw(checkpointed))  # weights_only=True reads it: nothing but these kinds


@pytest.mark.parametrize("where", ["top", "env", "env_bytes"])
def test_malicious_pickle_executes_nothing(checkpointed, tmp_path, where):
    run_dir = _copy_run(checkpointed, tmp_path / "run")
    marker = tmp_path / "marker"
    state = _raw(run_dir)
    if where == "top":
        state["model"] = _Payload(marker)
    elif where == "env":
        state["env"] = (state["env"][0], _Payload(marker))
    else:  # the old layout: each env a pickled blob, here a hostile one
        blocks = state["env"][1]["blocks"]
        blocks[0][0] = pickle.dumps(_Payload(marker))
    torch.save(state, run_dir / "checkpoints" / LATEST)
    trainer = _trainer(run_dir)
    with pytest.raises(EnvGenError) as err:
        trainer.resume()  # reads the file
        trainer.train_until(64, CONFIGS)  # opens the envs from the saved state
    trainer.close()
    _one_line(str(err.value), str(run_dir / "checkpoints" / LATEST))
    assert not marker.exists()


def test_malicious_checkpoint_through_the_cli(checkpointed, tmp_path):
    run_dir = _copy_run(checkpointed, tmp_path / "run")
    marker = tmp_path / "marker"
    state = _raw(run_dir)
    state["counters"] = _Payload(marker)
    torch.save(state, run_dir / "checkpoints" / LATEST)
    before = {p: p.read_bytes() for p in run_dir.rglob("*") if p.is_file()}
    args = ["train", "--steps", "64", "--seed", "3", "--out", str(run_dir), "--resume"]
    result = envgen_subprocess(*args)
    assert result.returncode != 0
    _one_line(result.stderr + result.stdout, "latest.pt", "unreadable checkpoint")
    assert not marker.exists()
    assert {p: p.read_bytes() for p in run_dir.rglob("*") if p.is_file()} == before


def test_cuda_generator_layout_resumes_on_cpu(checkpointed, tmp_path):
    """A checkpoint written on a GPU (action generator state of 16 bytes) resumes on the
    CPU: the generator is re-seeded from (seed, the checkpoint's step), so two such
    resumes agree with each other (not with the GPU run's action stream), also when one
    run wrote more checkpoints before it (wall-clock checkpoints vary that count)."""
    outcomes = []
    for name, extra_checkpoints in (("a", 0), ("b", 3)):
        run_dir = _copy_run(checkpointed, tmp_path / name)
        state = _raw(run_dir)
        assert state["action_rng"]["state"].numel() == 5056  # the CPU layout
        state["action_rng"] = {"device": "cuda", "state": torch.zeros(16, dtype=torch.uint8)}
        state["counters"]["checkpoints"] += extra_checkpoints
        torch.save(state, run_dir / "checkpoints" / LATEST)
        trainer = _trainer(run_dir)
        assert trainer.resume() and trainer.global_step == 32
        trainer.train_until(96, CONFIGS)
        trainer.close()
        metrics = [
            {k: v for k, v in m.items() if not k.startswith("time/")}
            for m in read_jsonl(run_dir / "metrics.jsonl")
        ]
        outcomes.append(((run_dir / "episodes.jsonl").read_text(), metrics))
    assert outcomes[0] == outcomes[1] and outcomes[0][1][-1]["step"] == 96
    assert load_checkpoint(tmp_path / "a" / "checkpoints", torch.device("cpu")) is not None


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"global_step": -100_000}, "global_step is -100000, not a whole number >= 0"),
        ({"global_step": "32"}, "global_step is '32', not a whole number >= 0"),
        ({"rollouts": True}, "rollouts is True"),
        ({"global_step": 48}, "not rollouts (1) x the rollout size (32)"),
        ({"checkpoint_step": 0}, "checkpoint_step 0 is not global_step 32"),
        ({"global_step": 64, "rollouts": 2, "checkpoint_step": 64}, "has no update at that step"),
        ({"bogus": 1}, "unknown counter 'bogus'"),
    ],
)
def test_checkpoint_counters_are_checked_before_the_logs_are_cut(
    checkpointed, tmp_path, change, words
):
    """`global_step = -100000` resumed, cut the logs and trained from step -99,936; a
    string step gave a TypeError traceback."""
    run_dir = _copy_run(checkpointed, tmp_path / "run")
    state = _raw(run_dir)
    state["counters"].update(change)
    torch.save(state, run_dir / "checkpoints" / LATEST)
    logs = {name: (run_dir / name).read_bytes() for name in ("episodes.jsonl", "metrics.jsonl")}
    trainer = _trainer(run_dir)
    with pytest.raises(EnvGenError) as err:
        trainer.resume()
    trainer.close()
    _one_line(str(err.value), str(run_dir / "checkpoints" / LATEST), words, "resume from step 0")
    assert {name: (run_dir / name).read_bytes() for name in logs} == logs
