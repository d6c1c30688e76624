"""`envgen gpu check` and `envgen gpu bench`: what holds on this machine's device, and how fast.

check, in order (each a line, all in OUT/check.json; exit 1 if one fails):
1. versions: python, torch, CUDA, cuDNN, the GPU, numpy, crafter;
2. the device tests (tests/test_agents_device.py, tests/test_agents_precision.py), where
   pytest and the tests are present;
3. a tiny PPO and a tiny AD run on the device (`envgen train`, deterministic, AD's
   auxiliary phase included: 2 envs x 64 steps, aux phase every 8 rollouts);
4. kill and resume: the AD run again, killed (SIGKILL) after its first checkpoint, then
   resumed; its logs and final weights must equal the uninterrupted run's;
5. its checkpoint loaded on the CPU (weights into a CPU network, one forward pass), and
   the run resumed on the CPU for one more rollout.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import os
import platform
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from importlib.metadata import version
from pathlib import Path
from typing import Any

import numpy
import torch

from envgen.agents.ad_networks import ADActorCritic
from envgen.agents.checkpoint import load_checkpoint
from envgen.agents.config import ModelConfig
from envgen.agents.device import describe
from envgen.agents.networks import OBS_SHAPE, ActorCritic
from envgen.store.run_dir import RunDir

REPO = Path(__file__).resolve().parents[2]
TINY = ["--num-envs", "2", "--num-steps", "64", "--minibatches", "2", "--workers", "1"]
ROLLOUT = 128  # 2 envs x 64 steps: 8 rollouts hold whole Crafter episodes for AD's aux phase
CHECKPOINT_EVERY = 2 * ROLLOUT
AUX_EVERY = 8  # ADConfig.aux_every


def versions(device: str) -> dict[str, Any]:
    out = {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "cudnn": torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None,
        "device": describe(device),
        "numpy": numpy.__version__,
    }
    try:
        out["crafter"] = version("crafter")
    except Exception:  # noqa: BLE001 - a source install without metadata
        out["crafter"] = "unknown"
    return out


def _train(out: Path, agent: str, steps: int, args: Any, resume: bool = False) -> list[str]:
    cmd = [sys.executable, "-m", "envgen.cli", "train", "--agent", agent, "--seed", "0"]
    cmd += ["--steps", str(steps), "--out", str(out), "--model", args.model]
    cmd += ["--device", args.device, "--deterministic", "--no-progress", *TINY]
    cmd += ["--checkpoint-every", str(CHECKPOINT_EVERY)] + (["--resume"] if resume else [])
    return cmd


def run_logs(run: Path) -> tuple[str, list[dict]]:
    """(episodes log, metrics without the time/ keys) of a run: what a repeat must equal."""
    metrics = [
        {k: v for k, v in json.loads(line).items() if not k.startswith("time/")}
        for line in RunDir(run).metrics.read_text().splitlines()
    ]
    return RunDir(run).episodes.read_text(), metrics


def _weights(run: Path) -> dict:
    state = load_checkpoint(RunDir(run).checkpoints, torch.device("cpu"))
    assert state is not None, f"{run}: no checkpoint"
    return state


def tiny_runs(work: Path, args: Any) -> dict[str, str]:
    """Steps 3 to 5 of the module docstring."""
    results: dict[str, str] = {}
    for agent in ("ppo", "ad"):
        subprocess.run(_train(work / agent, agent, args.steps, args), check=True)
        metrics = run_logs(work / agent)[1]
        aux = sum("losses/aux_match" in m or "losses/aux_prediction" in m for m in metrics)
        if agent == "ad" and not aux and args.steps >= AUX_EVERY * ROLLOUT:
            raise AssertionError("AD's auxiliary phase did not run (no whole episode?)")
        results[f"tiny {agent} run on {args.device}"] = f"ok: {len(metrics)} updates" + (
            f", {aux} with the auxiliary phase" if aux else ""
        )
    killed = work / "ad-killed"
    proc = subprocess.Popen(_train(killed, "ad", args.steps, args), start_new_session=True)
    metrics = RunDir(killed).metrics
    while proc.poll() is None:  # kill one rollout past the first checkpoint
        if metrics.is_file() and len(metrics.read_text().splitlines()) > 3:
            os.killpg(proc.pid, signal.SIGKILL)
            break
        time.sleep(0.02)
    proc.wait()
    subprocess.run(_train(killed, "ad", args.steps, args, resume=True), check=True)
    same_logs = run_logs(killed) == run_logs(work / "ad")
    a, b = _weights(killed)["model"], _weights(work / "ad")["model"]
    same_weights = all(bool((a[k] == b[k]).all()) for k in a)
    if not (same_logs and same_weights):
        raise AssertionError("the killed and resumed AD run differs from the uninterrupted one")
    results["kill and resume"] = "ok: logs and weights equal the uninterrupted run's"
    results["load on cpu"] = load_on_cpu(work / "ad")
    cpu_args = type(args)(**{**vars(args), "device": "cpu"})
    subprocess.run(_train(killed, "ad", args.steps + ROLLOUT, cpu_args, resume=True), check=True)
    resumed = len(run_logs(killed)[1]) - len(run_logs(work / "ad")[1])
    results["resume on cpu"] = f"ok: the {args.device} run resumed on the cpu: {resumed} update"
    return results


def load_on_cpu(run: Path) -> str:
    state = _weights(run)
    fields = {f.name for f in dataclasses.fields(ModelConfig)}
    saved = {k: tuple(v) if isinstance(v, list) else v for k, v in state["model_cfg"].items()}
    cfg = ModelConfig(**{k: v for k, v in saved.items() if k in fields})
    model = (ADActorCritic if state.get("agent") == "ad" else ActorCritic)(cfg)
    model.load_state_dict(state["model"])
    logprobs, value = model(torch.zeros((2, *OBS_SHAPE), dtype=torch.uint8))
    if not (torch.isfinite(logprobs).all() and torch.isfinite(value).all()):
        raise AssertionError("the network loaded on the CPU gives non-finite outputs")
    return "ok: weights loaded into a CPU network, finite outputs"


def device_tests() -> str:
    tests = [REPO / "tests" / "test_agents_device.py", REPO / "tests" / "test_agents_precision.py"]
    if importlib.util.find_spec("pytest") is None:
        return "skipped: pytest is not installed"
    if not all(t.is_file() for t in tests):
        return "skipped: tests/ not in this tree"
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *map(str, tests)]
    result = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True)
    if result.returncode:
        raise AssertionError(f"device tests failed: {result.stdout.splitlines()[-1:]}")
    return "ok: " + result.stdout.strip().splitlines()[-1]


def check(args: Any) -> int:
    report: dict[str, Any] = {"versions": versions(args.device)}
    print(json.dumps(report["versions"]), flush=True)
    steps: list[tuple[str, Callable[[], Any]]] = []
    if not args.no_device_tests:
        steps.append(("device tests", device_tests))
    with tempfile.TemporaryDirectory() as tmp:
        steps.append(("tiny runs", lambda: tiny_runs(Path(tmp), args)))
        failed = False
        for name, step in steps:
            try:
                result = step()
            except Exception as exc:  # noqa: BLE001 - every failure is a line of the report
                result, failed = f"FAILED: {type(exc).__name__}: {exc}", True
            for key, line in (result if isinstance(result, dict) else {name: result}).items():
                report[key] = line
                print(f"{key}: {line}", flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "check.json").write_text(json.dumps(report, indent=1) + "\n")
    return 1 if failed else 0


def bench(args: Any) -> int:
    """`envgen bench train` on the device for PPO and AD; OUT/bench.json."""
    results = {}
    for agent in ("ppo", "ad"):
        cmd = [sys.executable, "-m", "envgen.cli", "bench", "train", "--agent", agent]
        cmd += ["--device", args.device, "--model", args.model, "--no-reference"]
        cmd += ["--concurrency", args.concurrency]
        if args.rollouts:
            cmd += ["--rollouts", str(args.rollouts)]
        if args.deterministic:
            cmd.append("--deterministic")
        if args.tiny:
            cmd += TINY
        result = subprocess.run(cmd, capture_output=True, text=True)
        print(result.stdout, end="", flush=True)
        if result.returncode:
            print(result.stderr[-2000:], file=sys.stderr)
            return result.returncode
        results[agent] = json.loads(result.stdout.splitlines()[-1])
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "bench.json").write_text(json.dumps(results, indent=1) + "\n")
    return 0
